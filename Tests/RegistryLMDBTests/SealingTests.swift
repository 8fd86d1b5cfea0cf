import Foundation
import LMDB
@testable import RegistryCore
@testable import RegistryLMDB
import RegistryTestSupport
import Testing
import TokenSealing

/// Tokens sealed at rest in the LMDB files: no token in the data file or a backup, the key checks at open, damaged values.
struct SealingTests {
    @Test func theDataFileHoldsNoToken() async throws {
        let f = try await makeSealedStore(); defer { f.close() }
        // Rotations and removals leave old values behind in freed pages: those must be sealed too.
        try await f.store.register("carol", "d3", token: 1)
        try await f.store.register("carol", "d3", token: 2)
        f.lmdb.shutdown()
        let leaks = try Self.leaks(in: f.directory + "/env/data.mdb", of: SealedTokens.all)
        #expect(leaks == [])
        // The search itself finds what is there: the ids are stored in plaintext.
        #expect(try Self.leaks(in: f.directory + "/env/data.mdb", of: ["com.example.a"]) == ["com.example.a as text"])
    }

    @Test func aBackupHoldsNoToken() async throws {
        let f = try await makeSealedStore(); defer { f.close() }
        let copy = f.directory + "/backup"
        try f.lmdb.backup(toDirectory: copy)
        #expect(try Self.leaks(in: copy + "/data.mdb", of: SealedTokens.all) == [])
        // And the backup opens with the key file, tokens and all.
        let restored = try LMDBRegistryStore(configuration: LMDBRegistryStore.Configuration(directory: copy, tokenKeys: TestKeys.ring))
        defer { restored.shutdown() }
        #expect(try await restored.device(userId: "alice", deviceId: "d1")?.pushToken?.token == SealedTokens.push)
    }

    @Test func anotherKeyRingIsRefusedAtOpen() async throws {
        let f = try await makeSealedStore(); defer { f.close() }
        f.lmdb.shutdown()
        var configuration = f.configuration
        configuration.tokenKeys = try TokenKeyRing.generate()
        #expect(Self.openError(configuration) == .wrongTokenKeys)
        // The refused open changed nothing: the right keys still open every token.
        try f.reopen()
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToken?.token == SealedTokens.push)
    }

    @Test func theIndexKeyAloneIsNotEnough() async throws {
        let f = try await makeSealedStore(); defer { f.close() }
        f.lmdb.shutdown()
        var configuration = f.configuration
        // The sealing key the tokens use is missing (another id)...
        configuration.tokenKeys = try TokenKeyRing(
            indexKey: TestKeys.ring.indexKey,
            sealingKeys: [TokenKeyRing.SealingKey(id: TestKeys.ring.currentKeyID + 1, bytes: Self.randomKey())],
            currentKeyID: TestKeys.ring.currentKeyID + 1)
        #expect(Self.openError(configuration) == .wrongTokenKeys)
        // ...or another key under the same id.
        configuration.tokenKeys = try TokenKeyRing(
            indexKey: TestKeys.ring.indexKey,
            sealingKeys: [TokenKeyRing.SealingKey(id: TestKeys.ring.currentKeyID, bytes: Self.randomKey())],
            currentKeyID: TestKeys.ring.currentKeyID)
        #expect(Self.openError(configuration) == .wrongTokenKeys)
        try f.reopen()
        #expect(try await f.store.allActivityTokens("m").map(\.token) == [SealedTokens.activity])
    }

    @Test func checkReportsASealedValueThatDoesNotOpen() async throws {
        let f = try await makeSealedStore(); defer { f.close() }
        #expect(try await f.check() == [])
        try f.corrupt { txn, schema in
            let key = StoreKey.device("alice", "d1")
            var value = try #require(try txn.get(key, in: schema.pushToStart))
            value[value.count - 1] ^= 0x01
            try txn.put(value, for: key, in: schema.pushToStart)
        }
        let problems = try await f.check()
        #expect(problems.contains { $0.hasPrefix("pushToStart token \"alice\"/\"d1\": sealed value does not open") },
                "\(problems)")
        #expect(!problems.contains { $0.contains(SealedTokens.pushToStart) }, "a report never shows a token")
        // The other tokens still open.
        #expect(try await f.store.allActivityTokens("m").map(\.token) == [SealedTokens.activity])
    }

    @Test func checkReportsAnActivityValueSealedForAnotherSlot() async throws {
        let f = try await makeSealedStore(); defer { f.close() }
        // A sealed push value moved into an activity slot does not open there (the kind is the context).
        try f.corrupt { txn, schema in
            let push = try #require(try txn.get(StoreKey.device("alice", "d1"), in: schema.pushTokens))
            let key = try #require(try Self.firstKey(txn, schema.activityTokens))
            try txn.put(push, for: key, in: schema.activityTokens)
        }
        let problems = try await f.check()
        #expect(problems.contains { $0.hasPrefix("activity token ") && $0.contains("sealed value does not open") }, "\(problems)")
    }

    /// One damaged stored value (bit rot) is not "the wrong key file": the
    /// registry opens, and `check` names the damaged value. (The open-time
    /// key check recognises each sealing key by a check value of its own,
    /// and only refuses values under a key the file does not hold.)
    @Test func oneDamagedTokenDoesNotLockTheRegistryOut() async throws {
        let f = try await makeSealedStore(); defer { f.close() }
        try await f.store.registerPushToStart("carol", "d3", token: 1)
        try f.corrupt { txn, schema in
            let key = try #require(try Self.firstKey(txn, schema.pushToStart))
            var value = try #require(try txn.get(key, in: schema.pushToStart))
            value[value.count - 1] ^= 0x01
            try txn.put(value, for: key, in: schema.pushToStart)
        }
        f.lmdb.shutdown()
        try f.reopen()
        #expect(try await f.check().count >= 1)
    }

    /// A schema 2 registry migrated at open keeps no plaintext token in
    /// `data.mdb`: LMDB does not clear a freed page, so the store compacts
    /// the file in place after the migration ("a backup of the data
    /// directory without that file discloses no token").
    @Test func aMigratedDataFileHoldsNoPlaintextToken() async throws {
        let f = try makeStore(); defer { f.close() }
        f.lmdb.shutdown()
        try FileManager.default.removeItem(atPath: f.configuration.directory)
        let legacy = try LegacyEnvironment(f.configuration.directory)
        try legacy.write { w in
            try w.device("alice", "d1", lastSeen: 1_767_225_600_000, schema: 2, activities: 1)
            try w.token(.push, "alice", "d1", SealedTokens.push)
            try w.token(.pushToStart, "alice", "d1", SealedTokens.pushToStart)
            try w.activityToken("m", "alice", "d1", SealedTokens.activity)
            try w.version(2)
        }
        legacy.close()
        try f.reopen()
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToken?.token == SealedTokens.push)
        f.lmdb.shutdown()
        let leaks = try Self.leaks(in: f.configuration.directory + "/data.mdb",
                                   of: [SealedTokens.push, SealedTokens.pushToStart, SealedTokens.activity])
        #expect(leaks == [])
    }

    /// Every form a leaked token could take in a file.
    private static func forms(of token: String) -> [(String, [UInt8])] {
        var forms = [("text", Array(token.utf8)), ("uppercase text", Array(token.uppercased().utf8))]
        if case .success = Identifier.normalizeAPNsToken(token) {
            forms.append(("raw bytes", stride(from: 0, to: token.utf8.count, by: 2).map { i in
                let start = token.index(token.startIndex, offsetBy: i)
                return UInt8(token[start..<token.index(start, offsetBy: 2)], radix: 16)!
            }))
            // Half a token is still a leak (a page boundary could split a whole one).
            forms.append(("half of the raw bytes", Array(forms.last!.1.prefix(16))))
        }
        return forms
    }

    /// The tokens (in every form) found in `file`, as "token form" lines.
    private static func leaks(in file: String, of tokens: [String]) throws -> [String] {
        let data = try Data(contentsOf: URL(fileURLWithPath: file))
        #expect(data.count > 4_096, "read the real file: \(file)")
        var found: [String] = []
        for token in tokens {
            for (form, bytes) in forms(of: token) where data.range(of: Data(bytes)) != nil {
                found.append("\(token) as \(form)")
            }
        }
        return found
    }

    private static func firstKey(_ txn: ReadTransaction, _ db: Database) throws -> [UInt8]? {
        var first: [UInt8]?
        try txn.scan(db) { key, _ in
            first = key
            return false
        }
        return first
    }

    private enum OpenFailure: Equatable { case wrongTokenKeys, other(String), none }

    private static func openError(_ configuration: LMDBRegistryStore.Configuration) -> OpenFailure {
        do {
            let store = try LMDBRegistryStore(configuration: configuration)
            store.shutdown()
            return .none
        } catch RegistryOpenError.wrongTokenKeys {
            return .wrongTokenKeys
        } catch {
            return .other("\(error)")
        }
    }

    private static func randomKey() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<TokenKeyRing.keyLength).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}
