import Foundation
import Glibc
import LMDB
import Testing

/// C return codes reach callers as the right `LMDBError` case, and edge inputs fail cleanly rather than with a
/// confusing LMDB code.
@Suite struct ErrorMappingTests {
    @Test func aReadBeyondMaxReadersIsReadersFull() throws {
        try withEnvironment(configure: { $0.maxReaders = 1 }) { env, db throws in
            #expect(throws: LMDBError.readersFull) {
                try env.read { _ in try env.read { try $0.get(b("k"), in: db) } }
            }
            #expect(try env.read { try $0.get(b("k"), in: db) } == nil)
        }
    }

    @Test func openingMoreDatabasesThanConfiguredIsDatabasesFull() throws {
        try withEnvironment(configure: { $0.maxDatabases = 2 }) { env, _ in
            _ = try env.openDatabase("second")
            #expect(throws: LMDBError.databasesFull) { try env.openDatabase("third") }
        }
    }

    @Test func copyingIntoAMissingDirectoryIsASystemError() throws {
        try withEnvironment { env, _ in
            #expect(throws: LMDBError.system(errno: ENOENT)) {
                try env.copy(toDirectory: "/nonexistent-\(UUID().uuidString)", compact: false)
            }
        }
    }

    @Test func oversizedKeysAreRefusedByGetAndDeleteToo() throws {
        try withEnvironment { env, db in
            let tooLong = [UInt8](repeating: 1, count: 512)
            #expect(throws: LMDBError.badValueSize) { try env.read { try $0.get(tooLong, in: db) } }
            #expect(throws: LMDBError.badValueSize) { try env.write { try $0.delete([], in: db) } }
        }
    }

    @Test func reverseScanFromTheEmptyKeyVisitsNothing() throws {
        try withEnvironment { env, db in
            try env.write { try $0.put(b("v"), for: b("a"), in: db) }
            let visited = try env.read { txn in
                var visited = 0
                try txn.scan(db, from: [], reverse: true) { _, _ in visited += 1; return true }
                return visited
            }
            #expect(visited == 0)
        }
    }

    @Test func descriptionsAreLMDBsAndTheSystemsMessages() {
        #expect(LMDBError.mapFull.description.contains("MDB_MAP_FULL"))
        #expect(LMDBError.notFound.description.contains("MDB_NOTFOUND"))
        #expect(LMDBError.system(errno: ENOSPC).description == String(cString: strerror(ENOSPC)))
    }
}
