import Foundation
import LMDB
@testable import RegistryCore
@testable import RegistryLMDB
import RegistryTestSupport
import Testing
import TokenSealing

/// `check` on LMDB: what it reports of broken indexes, and a store dropped without shutdown.
struct IndexCheckTests {
    /// Two records holding one token break the one-owner rule even when the
    /// owner entry names one of them: feedback for the token removes it from
    /// that one only. `check` must say so (it used to accept any owner entry
    /// whose holder held the token, so only the rewritten record's old owner
    /// entry showed).
    @Test func checkReportsATokenHeldByTwoRecords() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.register("alice", "d2", token: 2)
        try f.corrupt { txn, schema in
            var value = try TokenValue(decoding: txn.get(StoreKey.device("alice", "d2"), in: schema.pushTokens)!,
                                        key: StoreKey.device("alice", "d2"))
            value.token = apnsToken(1)
            try txn.put(value.encoded(key: StoreKey.device("alice", "d2")), for: StoreKey.device("alice", "d2"), in: schema.pushTokens)
        }
        let problems = try await f.check()
        #expect(problems.contains("push token \"alice\"/\"d2\": the same token is also held by \"alice\"/\"d1\""), "\(problems)")
        #expect(problems.count == 2, "and token 2's owner entry names a holder that no longer holds it: \(problems)")
    }

    /// `check(progress:)` reports how far it got every 1,000 entries and at
    /// the end, and finds the same problems as without it.
    @Test func checkReportsProgressWithoutChangingItsResult() async throws {
        let f = try makeStore(); defer { f.close() }
        let store = f.store
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<300 { group.addTask { try await store.register("u\(i)", "d", token: i) } }
            try await group.waitForAll()
        }
        try f.corrupt { txn, schema in _ = try txn.delete(StoreKey.tokenOwner(apnsToken(7), .push), in: schema.tokenOwners) }
        var seen: [Int] = []
        let problems = try f.lmdb.check(progress: { seen.append($0) })
        #expect(problems == (try await f.check()))
        #expect(problems == ["push token \"u7\"/\"d\": no owner entry"])
        // 300 devices, push tokens, history events (each registered a token),
        // 600 expiry entries (devices and events), 299 owner entries.
        #expect(seen == [1_000, 1_799])
    }

    /// An unreadable device value that still has tokens is reported; it
    /// used to make `check` throw at the first of its tokens (which asked
    /// for the decoded device only to see whether it exists).
    @Test func checkReportsAnUnreadableDeviceThatHoldsTokens() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try f.corrupt { txn, schema in try txn.put([1, 0, 7], for: StoreKey.device("alice", "d1"), in: schema.devices) }
        #expect(Set(try await f.check()) == ["device \"alice\"/\"d1\": unreadable value",
                                             "expiry entry device \"alice\"/\"d1\": no record"])
    }

    @Test func aStoreDroppedWithoutShutdownClosesItsEnvironment() async throws {
        let directory = NSTemporaryDirectory() + "registry-drop-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.writeOnce(directory)
        let reopened = try LMDBRegistryStore(configuration: LMDBRegistryStore.Configuration(directory: directory, tokenKeys: TestKeys.ring))
        defer { reopened.shutdown() }
        #expect(try await reopened.device(userId: "alice", deviceId: "d1") != nil)
        try await reopened.register("alice", "d2")
        #expect(try await reopened.stats().devices == 2)
    }

    private static func writeOnce(_ directory: String) async throws {
        let store = try LMDBRegistryStore(configuration: LMDBRegistryStore.Configuration(directory: directory, tokenKeys: TestKeys.ring))
        try await store.register("alice", "d1", token: 1)
    }
}
