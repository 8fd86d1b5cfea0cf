import Foundation
import LMDB
@testable import RegistryCore
@testable import RegistryLMDB
@testable import RegistryPostgres
import TokenSealing
import Testing

/// API.md v1.1 "Tokens sealed at rest": no token in the data file or a
/// backup, the rules still work on sealed tokens, and a registry opens only
/// with the keys its tokens were sealed and indexed with.
struct SealingTests {
    /// Distinctive tokens: any copy of them in a file is a leak, not chance.
    private static let pushHex = String(repeating: "5ea1ed70", count: 8)
    private static let pushToStartHex = String(repeating: "decafbad", count: 8)
    private static let activityHex = String(repeating: "facefeed", count: 8)
    private static let fcmToken = "fcm-sealed:Zq7Xw_Token.Plain-Text-42"

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

    /// A store holding the distinctive tokens in every kind of slot.
    private func makeSealedStore() async throws -> StoreFixture {
        let f = try makeStore()
        _ = try await f.store.registerDevice(DeviceRegistration(userId: "alice", deviceId: "d1",
                                                                pushToken: .set(Self.pushHex.uppercased())))
        _ = try await f.store.registerPushToStartToken(PushToStartRegistration(userId: "alice", deviceId: "d1",
                                                                               token: Self.pushToStartHex))
        _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
            activityId: "m", userId: "alice", deviceId: "d1", token: Self.activityHex, appId: "com.example.a"))
        _ = try await f.store.registerDevice(DeviceRegistration(userId: "bob", deviceId: "d2",
                                                                pushToken: .set(Self.fcmToken), platform: .fcm))
        return f
    }

    private static var allTokens: [String] { [pushHex, pushToStartHex, activityHex, fcmToken] }

    @Test(.lmdbOnly) func theDataFileHoldsNoToken() async throws {
        let f = try await makeSealedStore(); defer { f.close() }
        // Rotations and removals leave old values behind in freed pages: those must be sealed too.
        try await f.store.register("carol", "d3", token: 1)
        try await f.store.register("carol", "d3", token: 2)
        f.lmdb.shutdown()
        let leaks = try Self.leaks(in: f.directory + "/env/data.mdb", of: Self.allTokens)
        #expect(leaks == [])
        // The search itself finds what is there: the ids are stored in plaintext.
        #expect(try Self.leaks(in: f.directory + "/env/data.mdb", of: ["com.example.a"]) == ["com.example.a as text"])
    }

    @Test(.lmdbOnly) func aBackupHoldsNoToken() async throws {
        let f = try await makeSealedStore(); defer { f.close() }
        let copy = f.directory + "/backup"
        try f.lmdb.backup(toDirectory: copy)
        #expect(try Self.leaks(in: copy + "/data.mdb", of: Self.allTokens) == [])
        // And the backup opens with the key file, tokens and all.
        let restored = try LMDBRegistryStore(configuration: LMDBRegistryStore.Configuration(directory: copy, tokenKeys: TestKeys.ring))
        defer { restored.shutdown() }
        #expect(try await restored.device(userId: "alice", deviceId: "d1")?.pushToken?.token == Self.pushHex)
    }

    @Test func theRulesWorkOnSealedTokens() async throws {
        let f = try await makeSealedStore(); defer { f.close() }
        let d1 = try #require(try await f.store.device(userId: "alice", deviceId: "d1"))
        #expect(d1.pushToken?.token == Self.pushHex && d1.pushToStartToken?.token == Self.pushToStartHex)
        #expect(try await f.store.allActivityTokens("m").map(\.token) == [Self.activityHex])
        // The one-owner rule finds the holder through the keyed index.
        _ = try await f.store.registerDevice(DeviceRegistration(userId: "dave", deviceId: "d9", pushToken: .set(Self.pushHex)))
        #expect(try await f.store.device(userId: "alice", deviceId: "d1") == nil)
        _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
            activityId: "m", userId: "dave", deviceId: "d9", token: Self.activityHex.uppercased()))
        #expect(try await f.store.allActivityTokens("m").map { "\($0.userId) \($0.token)" } == ["dave \(Self.activityHex)"])
        // Feedback finds it too, in any case, and after a reopen.
        try f.reopen()
        #expect(try await f.store.removeToken(Self.pushHex.uppercased(), reason: .unregistered, registeredBefore: nil) == 1)
        #expect(try await f.store.removeToken(Self.fcmToken, reason: .unregistered, registeredBefore: nil) == 1)
        #expect(try await f.store.removeToken(Self.activityHex, reason: .unregistered, registeredBefore: nil) == 1)
        let stats = try await f.store.stats()
        #expect(stats.pushTokens == 0 && stats.activityTokens == 0)
        #expect(try await f.check() == [])
    }

    @Test(.lmdbOnly) func anotherKeyRingIsRefusedAtOpen() async throws {
        let f = try await makeSealedStore(); defer { f.close() }
        f.lmdb.shutdown()
        var configuration = f.configuration
        configuration.tokenKeys = try TokenKeyRing.generate()
        #expect(Self.openError(configuration) == .wrongTokenKeys)
        // The refused open changed nothing: the right keys still open every token.
        try f.reopen()
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToken?.token == Self.pushHex)
    }

    @Test(.lmdbOnly) func theIndexKeyAloneIsNotEnough() async throws {
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
        #expect(try await f.store.allActivityTokens("m").map(\.token) == [Self.activityHex])
    }

    @Test func anEmptyRegistryOpensWithAnyRing() async throws {
        for _ in 0..<2 {
            let ring = try TokenKeyRing.generate()
            let f = try makeStore { $0.tokenKeys = ring }; defer { f.close() }
            try await f.store.register("alice", "d1", token: 1)
            try f.reopen()
            #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToken?.token == apnsToken(1))
            #expect(try await f.store.removeToken(apnsToken(1), reason: .unregistered, registeredBefore: nil) == 1)
        }
    }

    @Test(.lmdbOnly) func checkReportsASealedValueThatDoesNotOpen() async throws {
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
        #expect(!problems.contains { $0.contains(Self.pushToStartHex) }, "a report never shows a token")
        // The other tokens still open.
        #expect(try await f.store.allActivityTokens("m").map(\.token) == [Self.activityHex])
    }

    @Test(.lmdbOnly) func checkReportsAnActivityValueSealedForAnotherSlot() async throws {
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

    /// Whoever can write the data file or the database, but has no token
    /// keys, moves the sealed value of a token they hold (mallory's) into
    /// another user's record: it does not open there (each sealed value is
    /// bound to its record), so the victim's pushes never go to mallory's
    /// phone; reads of that record fail instead, and `check` names it.
    @Test func aSealedTokenMovedIntoAnotherRecordDoesNotOpenThere() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("mallory", "d1", token: 1)
        try await f.store.register("alice", "d1", token: 2)
        switch TestBackend.current {
        case .lmdb:
            try f.corrupt { txn, schema in
                let stolen = try #require(try txn.get(StoreKey.device("mallory", "d1"), in: schema.pushTokens))
                try txn.put(stolen, for: StoreKey.device("alice", "d1"), in: schema.pushTokens)
            }
        case .postgres:
            let connection = try f.databaseConnection(); defer { connection.close() }
            try connection.query("""
                UPDATE registry_tokens SET sealed = (SELECT sealed FROM registry_tokens WHERE user_id = 'mallory' AND kind = 1)
                WHERE user_id = 'alice' AND kind = 1
                """)
        }
        let read = await registryErrorOrValue { try await f.store.devices(userIds: ["alice"]) }
        #expect(read.value?.first?.devices.first?.pushToken?.token != apnsToken(1), "the moved value opened in alice's record")
        let problems = try await f.check()
        #expect(problems.contains { $0.contains("\"alice\"") && $0.contains("open") }, "\(problems)")
    }

    /// One damaged stored value (bit rot) is not "the wrong key file": the
    /// registry opens, and `check` names the damaged value. (The open-time
    /// key check recognises each sealing key by a check value of its own,
    /// and only refuses values under a key the file does not hold.)
    @Test(.lmdbOnly) func oneDamagedTokenDoesNotLockTheRegistryOut() async throws {
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
    @Test(.lmdbOnly) func aMigratedDataFileHoldsNoPlaintextToken() async throws {
        let f = try makeStore(); defer { f.close() }
        f.lmdb.shutdown()
        try FileManager.default.removeItem(atPath: f.configuration.directory)
        let legacy = try LegacyEnvironment(f.configuration.directory)
        try legacy.write { w in
            try w.device("alice", "d1", lastSeen: 1_767_225_600_000, schema: 2, activities: 1)
            try w.token(.push, "alice", "d1", Self.pushHex)
            try w.token(.pushToStart, "alice", "d1", Self.pushToStartHex)
            try w.activityToken("m", "alice", "d1", Self.activityHex)
            try w.version(2)
        }
        legacy.close()
        try f.reopen()
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToken?.token == Self.pushHex)
        f.lmdb.shutdown()
        let leaks = try Self.leaks(in: f.configuration.directory + "/data.mdb",
                                   of: [Self.pushHex, Self.pushToStartHex, Self.activityHex])
        #expect(leaks == [])
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

/// A stored token under a key this process's key file lacks (another
/// process or node sealed it under a key this one never loaded) is the
/// storage being unavailable (503), not a bug (500): on either backend. And
/// a registry whose tokens use a key the file lacks does not open at all.
struct UnknownSealingKeyTests {
    @Test func aTokenUnderAKeyTheRingLacksIsUnavailable() async throws {
        let original = try TokenKeyRing.generate()
        let newer = try original.addingRandomKey()
        let f = try makeStore { $0.tokenKeys = original }; defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.register("bobby", "d1", token: 2)
        // bobby's token re-sealed under key 2, which this store's ring lacks (and it cannot reload).
        switch TestBackend.current {
        case .lmdb:
            try f.corrupt { txn, schema in
                let key = StoreKey.device("bobby", "d1")
                let slot = TokenSlot(.push, key: key)
                let token = try TokenValue(decoding: try #require(try txn.get(key, in: schema.pushTokens)), in: slot,
                                           TokenVault(ring: original))
                try txn.put(try token.encoded(in: slot, TokenVault(ring: newer)), for: key, in: schema.pushTokens)
            }
        case .postgres:
            let other = try f.anotherNode { $0.tokenKeys = newer }
            defer { other.shutdown() }
            try await other.register("bobby", "d1", token: 3)  // a new token: sealed under key 2
        }
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToken?.token == apnsToken(1),
                "other records still read")
        do {
            _ = try await f.store.device(userId: "bobby", deviceId: "d1")
            Issue.record("a token under a key the ring lacks was read")
        } catch RegistryError.unavailable(let reason) {
            #expect(reason.contains("key 2"))
        } catch {
            Issue.record("expected RegistryError.unavailable, got \(error)")
        }
    }

    /// The start-up check: every key the registry uses must be in the key
    /// file (a server given an old copy of the file would otherwise start
    /// and answer 503 for those users for good).
    @Test func aRegistryUsingAKeyTheFileLacksDoesNotOpen() async throws {
        let original = try TokenKeyRing.generate()
        let f = try makeStore { $0.tokenKeys = try! original.addingRandomKey() }; defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        f.reconfigure { $0.tokenKeys = original }
        #expect(throws: RegistryOpenError.wrongTokenKeys(
            detail: "1 stored tokens are sealed under key 2, which it does not hold")) { try f.reopen() }
    }
}
