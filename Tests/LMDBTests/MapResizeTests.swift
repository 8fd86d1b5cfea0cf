import Foundation
import LMDB
import Synchronization
import Testing

/// The map changing size under running code: grown by this process while readers keep reading, or grown by
/// another process (`MDB_MAP_RESIZED`), which this process must adopt instead of failing.
@Suite struct MapResizeTests {
    @Test func theMapGrowsWhileOtherThreadsKeepReading() throws {
        try withEnvironment(configure: { $0.mapSize = 1 << 20 }) { env, db in
            try env.write { try $0.put(b("0"), for: b("counter"), in: db) }
            let start = try env.info.mapSizeBytes
            let writerDone = Atomic(false)
            let failures = Atomic(0)
            let value = [UInt8](repeating: 0x5A, count: 4_000)
            let deadline = Date().addingTimeInterval(10)
            DispatchQueue.global().async {
                defer { writerDone.store(true, ordering: .releasing) }
                for batch in 1...20 {
                    do {
                        try env.write { txn in
                            for i in 0..<100 { try txn.put(value, for: b("k-\(batch)-\(i)"), in: db) }
                            try txn.put(b("\(batch)"), for: b("counter"), in: db)
                        }
                    } catch {
                        failures.add(1, ordering: .relaxed)
                    }
                }
            }
            // Readers stop at the deadline even if the writer never finishes, so starvation fails, not hangs.
            DispatchQueue.concurrentPerform(iterations: 3) { _ in
                var last = 0
                while !writerDone.load(ordering: .acquiring), Date() < deadline {
                    let seen = try? env.read { txn in try txn.get(b("counter"), in: db) }
                    guard let seen, let now = Int(String(decoding: seen, as: UTF8.self)), now >= last else {
                        failures.add(1, ordering: .relaxed)
                        continue
                    }
                    last = now
                }
            }
            let finished = writerDone.load(ordering: .acquiring)
            #expect(finished, "the writer did not finish in 10 s: growing the map starved under readers")
            #expect(failures.load(ordering: .relaxed) == 0)
            #expect(try env.info.mapSizeBytes > start)
            #expect(try env.read { try $0.get(b("counter"), in: db) } == b("20"))
            #expect(try env.read { try $0.get(b("k-20-99"), in: db) } == value)
        }
    }

    @Test func aMapGrownByAnotherProcessIsAdoptedByReadsAndWrites() throws {
        try TemporaryDirectory.with { directory in
            let path = directory.child("env")
            let env = try Environment(Environment.Configuration(path: path, mapSize: 1 << 20))
            defer { env.close() }
            let db = try env.openDatabase("main")
            try env.write { try $0.put(b("before"), for: b("k"), in: db) }
            #expect(try env.info.mapSizeBytes == 1 << 20)

            // mdb_load sets the map size from the dump header and fills it past our 1 MiB map; LMDB reports
            // MDB_MAP_RESIZED only when the other process's data no longer fits in our map.
            try Self.loadFromChildProcess(entries: 500, valueBytes: 4_000, mapSize: 4 << 20, into: path,
                                          dump: directory.child("dump.txt"))
            #expect(try env.read { try $0.get(b("k"), in: db) } == b("before"))
            #expect(try env.info.mapSizeBytes == 4 << 20)
            let loaded = try env.openDatabase("loaded", create: false)
            #expect(try env.read { try $0.count(in: loaded) } == 500)

            try Self.loadFromChildProcess(entries: 1_500, valueBytes: 4_000, mapSize: 8 << 20, into: path,
                                          dump: directory.child("dump2.txt"))
            try env.write { try $0.put(b("after"), for: b("k"), in: db) }
            #expect(try env.info.mapSizeBytes == 8 << 20)
            #expect(try env.read { try $0.get(b("k"), in: db) } == b("after"))
            #expect(try env.read { try $0.count(in: loaded) } == 1_500)
        }
    }

    /// Writes an `mdb_dump` text file for database "loaded" and runs `/usr/bin/mdb_load` on `path`.
    private static func loadFromChildProcess(entries: Int, valueBytes: Int, mapSize: Int, into path: String,
                                             dump: String) throws {
        let hexValue = String(repeating: "ab", count: valueBytes)
        var text = "VERSION=3\nformat=bytevalue\ndatabase=loaded\ntype=btree\nmapsize=\(mapSize)\nHEADER=END\n"
        for i in 0..<entries {
            let key = b(String(format: "entry-%06d", i)).map { String(format: "%02x", $0) }.joined()
            text += " \(key)\n \(hexValue)\n"
        }
        text += "DATA=END\n"
        try text.write(toFile: dump, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/mdb_load")
        process.arguments = ["-f", dump, "-s", "loaded", path]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "mdb_load failed")
    }
}
