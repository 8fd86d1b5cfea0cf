import Foundation
import LMDB
@testable import RegistryCore
@testable import RegistryLMDB
@testable import RegistryPostgres
import TokenSealing
import RegistryTestSupport
import Testing

/// docs/api.md "Tokens sealed at rest": no token in the data file or a
/// backup, the rules still work on sealed tokens, and a registry opens only
/// with the keys its tokens were sealed and indexed with.
struct SealingTests {

    @Test func theRulesWorkOnSealedTokens() async throws {
        let f = try await makeSealedStore(); defer { f.close() }
        let d1 = try #require(try await f.store.device(userId: "alice", deviceId: "d1"))
        #expect(d1.pushToken?.token == SealedTokens.push && d1.pushToStartToken?.token == SealedTokens.pushToStart)
        #expect(try await f.store.allActivityTokens("m").map(\.token) == [SealedTokens.activity])
        // The one-owner rule finds the holder through the keyed index.
        _ = try await f.store.registerDevice(DeviceRegistration(userId: "dave", deviceId: "d9", pushToken: .set(SealedTokens.push)))
        #expect(try await f.store.device(userId: "alice", deviceId: "d1") == nil)
        _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
            activityId: "m", userId: "dave", deviceId: "d9", token: SealedTokens.activity.uppercased()))
        #expect(try await f.store.allActivityTokens("m").map { "\($0.userId) \($0.token)" } == ["dave \(SealedTokens.activity)"])
        // Feedback finds it too, in any case, and after a reopen.
        try f.reopen()
        #expect(try await f.store.removeToken(SealedTokens.push.uppercased(), reason: .unregistered, registeredBefore: nil) == 1)
        #expect(try await f.store.removeToken(SealedTokens.fcm, reason: .unregistered, registeredBefore: nil) == 1)
        #expect(try await f.store.removeToken(SealedTokens.activity, reason: .unregistered, registeredBefore: nil) == 1)
        let stats = try await f.store.stats()
        #expect(stats.pushTokens == 0 && stats.activityTokens == 0)
        #expect(try await f.check() == [])
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
