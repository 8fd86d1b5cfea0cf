import LMDB
import Testing

/// `scan`: key order, prefix bounds, `from`, reverse, early stop.
@Suite struct ScanTests {
    private func keys(_ env: Environment, _ db: Database, prefix: [UInt8] = [], from: [UInt8]? = nil,
                      reverse: Bool = false, limit: Int = .max) throws -> [String] {
        try env.read { txn in
            var found: [String] = []
            try txn.scan(db, prefix: prefix, from: from, reverse: reverse) { key, _ in
                found.append(String(decoding: key, as: UTF8.self))
                return found.count < limit
            }
            return found
        }
    }

    private func fill(_ env: Environment, _ db: Database, _ keys: [String]) throws {
        try env.write { txn in for key in keys { try txn.put(b("v"), for: b(key), in: db) } }
    }

    @Test func forwardScanVisitsKeysInOrderWithinThePrefix() throws {
        try withEnvironment { env, db in
            try fill(env, db, ["b2", "a", "b1", "c", "b3"])
            #expect(try keys(env, db) == ["a", "b1", "b2", "b3", "c"])
            #expect(try keys(env, db, prefix: b("b")) == ["b1", "b2", "b3"])
            #expect(try keys(env, db, prefix: b("b"), from: b("b2")) == ["b2", "b3"])
            #expect(try keys(env, db, prefix: b("b"), from: b("a")) == ["b1", "b2", "b3"])
            #expect(try keys(env, db, prefix: b("x")) == [])
        }
    }

    @Test func scanInPlaceVisitsWhatScanVisitsAndStopsWhenAsked() throws {
        try withEnvironment { env, db in
            try env.write { txn in
                for key in ["a", "b1", "b2", "b3", "c"] { try txn.put(b("value of " + key), for: b(key), in: db) }
            }
            let (copied, inPlace, firstTwo) = try env.read { txn in
                var copied: [[UInt8]] = [], inPlace: [[UInt8]] = [], firstTwo: [[UInt8]] = []
                try txn.scan(db, prefix: b("b")) { key, value in copied += [key, value]; return true }
                try txn.scanInPlace(db, prefix: b("b")) { key, value in inPlace += [Array(key), Array(value)]; return true }
                try txn.scanInPlace(db, prefix: []) { key, _ in firstTwo.append(Array(key)); return firstTwo.count < 2 }
                return (copied, inPlace, firstTwo)
            }
            #expect(inPlace == copied)
            #expect(copied.count == 6)
            #expect(firstTwo == [b("a"), b("b1")])
        }
    }

    @Test func reverseScanStartsAtTheLastKeyNotAfterFrom() throws {
        try withEnvironment { env, db in
            try fill(env, db, ["a", "b1", "b2", "b3", "c"])
            #expect(try keys(env, db, reverse: true) == ["c", "b3", "b2", "b1", "a"])
            #expect(try keys(env, db, from: b("b2"), reverse: true) == ["b2", "b1", "a"])
            #expect(try keys(env, db, from: b("b25"), reverse: true) == ["b2", "b1", "a"])
            #expect(try keys(env, db, from: b("zzz"), reverse: true) == ["c", "b3", "b2", "b1", "a"])
            #expect(try keys(env, db, prefix: b("b"), reverse: true) == ["b3", "b2", "b1"])
            #expect(try keys(env, db, prefix: b("b"), from: b("b2"), reverse: true) == ["b2", "b1"])
            #expect(try keys(env, db, prefix: b("b"), from: b("bz"), reverse: true) == ["b3", "b2", "b1"])
            #expect(try keys(env, db, prefix: b("b"), from: b("c"), reverse: true) == ["b3", "b2", "b1"])
            #expect(try keys(env, db, prefix: b("b"), from: b("a"), reverse: true) == [])
        }
    }

    @Test func reverseScanOfAnAllFFPrefixReachesTheEnd() throws {
        try withEnvironment { env, db in
            try env.write { txn in
                for key: [UInt8] in [[0x01], [0xFF, 0x01], [0xFF, 0xFF], [0xFF, 0xFF, 0x02]] {
                    try txn.put(b("v"), for: key, in: db)
                }
            }
            let found = try env.read { txn in
                var found: [[UInt8]] = []
                try txn.scan(db, prefix: [0xFF, 0xFF], reverse: true) { key, _ in found.append(key); return true }
                return found
            }
            #expect(found == [[0xFF, 0xFF, 0x02], [0xFF, 0xFF]])
        }
    }

    @Test func visitReturningFalseStops() throws {
        try withEnvironment { env, db in
            try fill(env, db, ["a", "b", "c", "d"])
            #expect(try keys(env, db, limit: 2) == ["a", "b"])
            #expect(try keys(env, db, reverse: true, limit: 1) == ["d"])
        }
    }
}
