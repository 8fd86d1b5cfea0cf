import Foundation
import LMDB
import Synchronization
import Testing

/// Map growth, limits, concurrency, copies and the environment's lifetime.
@Suite struct EnvironmentTests {
    @Test func aOneMebibyteMapGrowsToHoldFortyMegabytes() throws {
        try withEnvironment(configure: { $0.mapSize = 1 << 20 }) { env, db in
            let start = try env.info.mapSizeBytes
            let value = [UInt8](repeating: 0xAB, count: 4_000)
            for batch in 0..<10 {
                try env.write { txn in
                    for i in 0..<1_000 { try txn.put(value, for: b("k-\(batch)-\(i)"), in: db) }
                }
            }
            #expect(try env.info.mapSizeBytes > start)
            #expect(try env.read { try $0.count(in: db) } == 10_000)
            #expect(try env.read { try $0.get(b("k-9-999"), in: db) } == value)
        }
    }

    @Test func mapFullSurfacesAtMaxMapSizeAndReadsStillWork() throws {
        try withEnvironment(configure: { $0.mapSize = 1 << 20; $0.maxMapSize = 2 << 20 }) { env, db in
            try env.write { try $0.put(b("kept"), for: b("first"), in: db) }
            let value = [UInt8](repeating: 1, count: 4_000)
            #expect(throws: LMDBError.mapFull) {
                try env.write { txn in
                    for i in 0..<2_000 { try txn.put(value, for: b("big-\(i)"), in: db) }
                }
            }
            #expect(try env.read { try $0.get(b("first"), in: db) } == b("kept"))
            #expect(try env.read { try $0.get(b("big-0"), in: db) } == nil)
        }
    }

    @Test func aMapFullCaughtInsideNestedStillGrowsAndRerunsTheWrite() throws {
        try withEnvironment(configure: { $0.mapSize = 1 << 20 }) { env, db in
            let value = [UInt8](repeating: 0xCD, count: 4_000)
            let runs = Mutex(0)
            let caught = try env.write { txn -> Int in
                runs.withLock { $0 += 1 }
                var caught = 0
                for i in 0..<1_000 {
                    do {
                        try txn.nested { try $0.put(value, for: b("n-\(i)"), in: db) }
                    } catch LMDBError.mapFull {
                        caught += 1
                    }
                }
                return caught
            }
            #expect(runs.withLock { $0 } > 1)
            #expect(caught == 0)
            #expect(try env.read { try $0.count(in: db) } == 1_000)
        }
    }

    @Test func keysMustBeOneTo511Bytes() throws {
        try withEnvironment { env, db in
            #expect(throws: LMDBError.badValueSize) { try env.write { try $0.put(b("v"), for: [], in: db) } }
            #expect(throws: LMDBError.badValueSize) {
                try env.write { try $0.put(b("v"), for: [UInt8](repeating: 7, count: 512), in: db) }
            }
            let longest = [UInt8](repeating: 7, count: 511)
            try env.write { try $0.put(b("v"), for: longest, in: db) }
            #expect(try env.read { try $0.get(longest, in: db) } == b("v"))
        }
    }

    @Test func readersOnManyThreadsSeeOnlyCommittedValues() throws {
        try withEnvironment { env, db in
            try env.write { txn in
                try txn.put(b("0"), for: b("a"), in: db)
                try txn.put(b("0"), for: b("b"), in: db)
            }
            let failures = Atomic(0)
            let writerDone = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                for i in 1...200 {
                    try? env.write { txn in
                        try txn.put(b("\(i)"), for: b("a"), in: db)
                        try txn.put(b("\(i)"), for: b("b"), in: db)
                    }
                }
                writerDone.signal()
            }
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                for _ in 0..<500 {
                    // Both keys are written in one transaction, so a reader sees them equal.
                    let pair = try? env.read { txn in (try txn.get(b("a"), in: db), try txn.get(b("b"), in: db)) }
                    if pair == nil || pair!.0 != pair!.1 { failures.add(1, ordering: .relaxed) }
                }
            }
            writerDone.wait()
            #expect(try env.read { try $0.get(b("a"), in: db) } == b("200"))
            #expect(failures.load(ordering: .relaxed) == 0)
        }
    }

    @Test func copyHoldsTheSameDataAndReopenKeepsIt() throws {
        try TemporaryDirectory.with { directory in
            let env = try Environment(Environment.Configuration(path: directory.child("env")))
            let db = try env.openDatabase("main")
            try env.write { try $0.put(b("value"), for: b("key"), in: db) }
            try FileManager.default.createDirectory(atPath: directory.child("copy"), withIntermediateDirectories: true)
            try env.copy(toDirectory: directory.child("copy"), compact: true)
            env.close()
            for path in [directory.child("env"), directory.child("copy")] {
                let reopened = try Environment(Environment.Configuration(path: path))
                let again = try reopened.openDatabase("main", create: false)
                #expect(try reopened.read { try $0.get(b("key"), in: again) } == b("value"), "\(path)")
                reopened.close()
            }
        }
    }

    @Test func callsAfterCloseThrowAndCloseIsIdempotent() throws {
        try TemporaryDirectory.with { directory in
            let env = try Environment(Environment.Configuration(path: directory.child("env")))
            let db = try env.openDatabase("main")
            env.close()
            env.close()
            #expect(throws: LMDBError.self) { try env.read { try $0.get(b("k"), in: db) } }
            #expect(throws: LMDBError.self) { try env.write { try $0.put(b("v"), for: b("k"), in: db) } }
        }
    }

    @Test func openingAMissingDatabaseWithoutCreateIsNotFound() throws {
        try withEnvironment { env, _ in
            #expect(throws: LMDBError.notFound) { try env.openDatabase("absent", create: false) }
        }
    }

    @Test func staleReaderCheckAndInfoAnswer() throws {
        try withEnvironment { env, _ in
            #expect(try env.checkStaleReaders() == 0)
            let info = try env.info
            #expect(info.pageSize > 0)
            #expect(info.usedBytes > 0)
            #expect(info.usedBytes <= info.mapSizeBytes)
        }
    }
}
