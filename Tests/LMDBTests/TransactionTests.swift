import LMDB
import Testing

/// Put, get, delete and the commit/abort rules of `write` and `nested`.
@Suite struct TransactionTests {
    @Test func putThenGetReturnsTheValueAndDeleteRemovesIt() throws {
        try withEnvironment { env, db in
            try env.write { try $0.put(b("v1"), for: b("k"), in: db) }
            #expect(try env.read { try $0.get(b("k"), in: db) } == b("v1"))
            try env.write { try $0.put(b("v2"), for: b("k"), in: db) }
            #expect(try env.read { try $0.get(b("k"), in: db) } == b("v2"))
            let deleted = try env.write { try $0.delete(b("k"), in: db) }
            #expect(deleted)
            #expect(try env.read { try $0.get(b("k"), in: db) } == nil)
        }
    }

    @Test func missingKeyReadsAsNil() throws {
        try withEnvironment { env, db in
            try env.write { try $0.put(b("v"), for: b("present"), in: db) }
            #expect(try env.read { try $0.get(b("absent"), in: db) } == nil)
        }
    }

    @Test func deletingAMissingKeyReturnsFalse() throws {
        try withEnvironment { env, db in
            let deleted = try env.write { try $0.delete(b("absent"), in: db) }
            #expect(!deleted)
        }
    }

    @Test func emptyValueRoundTripsAsEmptyNotNil() throws {
        try withEnvironment { env, db in
            try env.write { try $0.put([], for: b("k"), in: db) }
            #expect(try env.read { try $0.get(b("k"), in: db) } == [])
        }
    }

    @Test func writesAreVisibleInsideTheirOwnTransactionBeforeCommit() throws {
        try withEnvironment { env, db in
            let seen = try env.write { txn in
                try txn.put(b("v"), for: b("k"), in: db)
                return try txn.get(b("k"), in: db)
            }
            #expect(seen == b("v"))
        }
    }

    @Test func writeWhoseBodyThrowsLeavesNothing() throws {
        try withEnvironment { env, db in
            try env.write { try $0.put(b("old"), for: b("kept"), in: db) }
            #expect(throws: Rollback.self) {
                try env.write { txn in
                    try txn.put(b("new"), for: b("kept"), in: db)
                    try txn.put(b("v"), for: b("added"), in: db)
                    throw Rollback()
                }
            }
            #expect(try env.read { try $0.get(b("kept"), in: db) } == b("old"))
            #expect(try env.read { try $0.get(b("added"), in: db) } == nil)
            #expect(try env.read { try $0.count(in: db) } == 1)
        }
    }

    @Test func nestedThatThrowsKeepsTheParentsWritesButNotTheChilds() throws {
        try withEnvironment { env, db in
            try env.write { txn in
                try txn.put(b("p"), for: b("parent"), in: db)
                do {
                    try txn.nested { child in
                        try child.put(b("c"), for: b("child"), in: db)
                        try child.put(b("overwritten"), for: b("parent"), in: db)
                        throw Rollback()
                    }
                    Issue.record("nested should have thrown")
                } catch is Rollback {}
            }
            #expect(try env.read { try $0.get(b("parent"), in: db) } == b("p"))
            #expect(try env.read { try $0.get(b("child"), in: db) } == nil)
        }
    }

    @Test func nestedThatReturnsKeepsBothAndPassesItsValueOut() throws {
        try withEnvironment { env, db in
            let value = try env.write { txn in
                try txn.put(b("p"), for: b("parent"), in: db)
                return try txn.nested { child in
                    try child.put(b("c"), for: b("child"), in: db)
                    return try child.get(b("parent"), in: db)
                }
            }
            #expect(value == b("p"))
            #expect(try env.read { try $0.get(b("parent"), in: db) } == b("p"))
            #expect(try env.read { try $0.get(b("child"), in: db) } == b("c"))
        }
    }

    @Test func nestedChangesAreDiscardedWhenTheParentAborts() throws {
        try withEnvironment { env, db throws in
            #expect(throws: Rollback.self) {
                try env.write { txn in
                    try txn.nested { try $0.put(b("c"), for: b("child"), in: db) }
                    throw Rollback()
                }
            }
            #expect(try env.read { try $0.get(b("child"), in: db) } == nil)
        }
    }

    @Test func countMatchesTheNumberOfEntries() throws {
        try withEnvironment { env, db in
            #expect(try env.read { try $0.count(in: db) } == 0)
            try env.write { txn in
                for i in 0..<25 { try txn.put(b("v"), for: b("key\(i)"), in: db) }
            }
            #expect(try env.read { try $0.count(in: db) } == 25)
            try env.write { txn in
                try txn.put(b("again"), for: b("key3"), in: db)
                try txn.delete(b("key4"), in: db)
            }
            #expect(try env.read { try $0.count(in: db) } == 24)
        }
    }

    @Test func databasesAreSeparateNamespaces() throws {
        try withEnvironment { env, db in
            let other = try env.openDatabase("other")
            try env.write { try $0.put(b("main"), for: b("k"), in: db) }
            #expect(try env.read { try $0.get(b("k"), in: other) } == nil)
            #expect(try env.read { try $0.count(in: other) } == 0)
        }
    }

    @Test func aTransactionKeptPastItsClosureThrowsInsteadOfCrashing() throws {
        try withEnvironment { env, db in
            let escapedRead = try env.read { $0 }
            #expect(throws: LMDBError.badTransaction) { try escapedRead.get(b("k"), in: db) }
            let escapedWrite = try env.write { $0 }
            #expect(throws: LMDBError.badTransaction) { try escapedWrite.put(b("v"), for: b("k"), in: db) }
            #expect(throws: LMDBError.badTransaction) { try escapedWrite.count(in: db) }
            #expect(throws: LMDBError.badTransaction) { try escapedWrite.scan(db) { _, _ in true } }
        }
    }
}
