import RegistryCore
import RegistryTestSupport
import Testing

/// Sign-out and the single-token deletes.
struct SignOutTests {
    @Test func signOutRemovesDevicePushToStartAndActivityTokens() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        _ = try await f.store.registerPushToStartToken(PushToStartRegistration(userId: "alice", deviceId: "d1", token: apnsToken(2)))
        for activity in ["m1", "m2"] {
            _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
                activityId: activity, userId: "alice", deviceId: "d1", token: apnsToken(activity == "m1" ? 3 : 4)))
        }
        try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: nil)
        let stats = try await f.store.stats()
        #expect(stats.devices == 0 && stats.pushTokens == 0 && stats.pushToStartTokens == 0 && stats.activityTokens == 0)
        #expect(try await f.store.allActivityTokens("m1").isEmpty)
        #expect(try await f.store.allActivityTokens("m2").isEmpty)
        #expect(stats.tombstones == 0, "a sign-out without sequence leaves no tombstone")
    }

    @Test func signOutSucceedsWhenNothingWasThere() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.signOut(userId: "alice", deviceId: "ghost", sequence: nil)
        #expect(try await f.store.stats().devices == 0)
    }

    @Test func signOutLeavesOtherDevicesAndUsersAlone() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.register("alice", "d2", token: 2)
        try await f.store.register("bob", "d1", token: 3)
        try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: nil)
        #expect(try await f.store.deviceIds("alice") == ["d2"])
        #expect(try await f.store.deviceIds("bob") == ["d1"])
    }

    @Test func signedOutTokensAreFreeForAnotherDevice() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: nil)
        try await f.store.register("alice", "d2", token: 1)
        try await f.store.register("alice", "d3", token: 1)
        #expect(try await f.store.deviceIds("alice") == ["d3"])
    }

    @Test func removingThePushToStartTokenKeepsTheDevice() async throws {
        let f = try makeStore(); defer { f.close() }
        _ = try await f.store.registerPushToStartToken(PushToStartRegistration(userId: "alice", deviceId: "d1", token: apnsToken(2)))
        try await f.store.removePushToStartToken(userId: "alice", deviceId: "d1")
        try await f.store.removePushToStartToken(userId: "alice", deviceId: "d1")
        let d = try #require(try await f.store.device(userId: "alice", deviceId: "d1"))
        #expect(d.pushToStartToken == nil)
        #expect(try await f.store.stats().pushToStartTokens == 0)
    }

    @Test func removingOneActivityTokenKeepsTheOthers() async throws {
        let f = try makeStore(); defer { f.close() }
        for (i, activity) in ["m1", "m2"].enumerated() {
            _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
                activityId: activity, userId: "alice", deviceId: "d1", token: apnsToken(i)))
        }
        try await f.store.removeActivityToken(activityId: "m1", userId: "alice", deviceId: "d1")
        try await f.store.removeActivityToken(activityId: "m1", userId: "alice", deviceId: "nobody")
        #expect(try await f.store.allActivityTokens("m1").isEmpty)
        #expect(try await f.store.allActivityTokens("m2").count == 1)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.activityCount == 1)
    }
}
