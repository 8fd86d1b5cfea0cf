import RegistryCore
import RegistryTestSupport
import Testing

/// One owner per token, the device cap, and registrations that create devices.
struct OwnershipTests {
    /// d1 of alice with a push token, a push-to-start token and an activity token.
    private func makeLoadedDevice(_ store: any RegistryStore, user: String = "alice", device: String = "d1") async throws {
        try await store.register(user, device, token: 1)
        _ = try await store.registerPushToStartToken(PushToStartRegistration(userId: user, deviceId: device, token: apnsToken(2)))
        _ = try await store.registerActivityToken(ActivityTokenRegistration(
            activityId: "match-1", userId: user, deviceId: device, token: apnsToken(3)))
    }

    @Test func reinstallDeletesTheOldRecordWithAllItsTokens() async throws {
        let f = try makeStore(); defer { f.close() }
        try await makeLoadedDevice(f.store)
        try await f.store.register("alice", "d2", token: 1)
        #expect(try await f.store.deviceIds("alice") == ["d2"])
        let stats = try await f.store.stats()
        #expect(stats.pushToStartTokens == 0 && stats.activityTokens == 0 && stats.pushTokens == 1)
        #expect(try await f.store.allActivityTokens("match-1").isEmpty)
    }

    @Test func accountSwitchDeletesTheOtherUsersRecord() async throws {
        let f = try makeStore(); defer { f.close() }
        try await makeLoadedDevice(f.store)
        try await f.store.register("bob", "d1", token: 1)
        #expect(try await f.store.deviceIds("alice") == [])
        #expect(try await f.store.device(userId: "bob", deviceId: "d1")?.pushToken?.token == apnsToken(1))
        #expect(try await f.store.stats().devices == 1)
    }

    @Test func pushToStartTokenHasOneOwner() async throws {
        let f = try makeStore(); defer { f.close() }
        try await makeLoadedDevice(f.store)
        _ = try await f.store.registerPushToStartToken(PushToStartRegistration(userId: "alice", deviceId: "d2", token: apnsToken(2)))
        #expect(try await f.store.deviceIds("alice") == ["d2"])
    }

    @Test func activityTokenMovesWithoutDeletingTheOldDevice() async throws {
        let f = try makeStore(); defer { f.close() }
        try await makeLoadedDevice(f.store)
        _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
            activityId: "match-1", userId: "bob", deviceId: "b1", token: apnsToken(3)))
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.activityCount == 0)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToken != nil)
        #expect(try await f.store.allActivityTokens("match-1").map(\.userId) == ["bob"])
    }

    @Test func sameDeviceRegisteringItsOwnTokenKeepsIt() async throws {
        let f = try makeStore(); defer { f.close() }
        try await makeLoadedDevice(f.store)
        try await makeLoadedDevice(f.store)
        let d = try #require(try await f.store.device(userId: "alice", deviceId: "d1"))
        #expect(d.pushToken != nil && d.pushToStartToken != nil && d.activityCount == 1)
    }

    @Test func capEvictsTheLeastRecentlySeenDevice() async throws {
        let f = try makeStore(maxDevicesPerUser: 3); defer { f.close() }
        for device in ["d1", "d2", "d3"] {
            try await f.store.register("alice", device)
            f.clock.advance(seconds: 1)
        }
        try await f.store.register("alice", "d1")
        f.clock.advance(seconds: 1)
        try await f.store.register("alice", "d4")
        #expect(try await f.store.deviceIds("alice") == ["d4", "d1", "d3"])
    }

    @Test func evictedDeviceLosesAllItsTokens() async throws {
        let f = try makeStore(maxDevicesPerUser: 1); defer { f.close() }
        try await makeLoadedDevice(f.store)
        f.clock.advance(seconds: 1)
        try await f.store.register("alice", "d2")
        let stats = try await f.store.stats()
        #expect(stats.devices == 1 && stats.pushTokens == 0 && stats.pushToStartTokens == 0 && stats.activityTokens == 0)
    }

    @Test func slotFreedByTheOneOwnerRuleCountsBeforeTheCap() async throws {
        let f = try makeStore(maxDevicesPerUser: 2); defer { f.close() }
        try await f.store.register("alice", "old", token: 2)
        f.clock.advance(seconds: 1)
        try await f.store.register("alice", "reinstalled", token: 1)
        f.clock.advance(seconds: 1)
        // The new id takes token 1: "reinstalled" goes by the one-owner rule, so the cap evicts nothing.
        try await f.store.register("alice", "new", token: 1)
        #expect(try await f.store.deviceIds("alice") == ["new", "old"])
    }

    @Test func capIsPerUser() async throws {
        let f = try makeStore(maxDevicesPerUser: 1); defer { f.close() }
        try await f.store.register("alice", "d1")
        try await f.store.register("bob", "d1")
        #expect(try await f.store.stats().devices == 2)
    }

    @Test func pushToStartRegistrationCreatesTheDeviceAndRefreshesLastSeen() async throws {
        let f = try makeStore(); defer { f.close() }
        let created = try await f.store.registerPushToStartToken(PushToStartRegistration(
            userId: "alice", deviceId: "d1", token: apnsToken(5).uppercased(), environment: .sandbox))
        #expect(created.pushToStartToken == StoredToken(token: apnsToken(5), environment: .sandbox, updatedAt: f.clock.now()))
        #expect(created.platform == .apns && created.pushToken == nil)
        f.clock.advance(seconds: 30)
        _ = try await f.store.registerPushToStartToken(PushToStartRegistration(userId: "alice", deviceId: "d1", token: apnsToken(5)))
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.lastSeenAt == f.clock.now())
    }

    @Test func activityRegistrationCreatesTheDeviceAndRefreshesLastSeen() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1")
        f.clock.advance(seconds: 30)
        let token = try await f.store.registerActivityToken(ActivityTokenRegistration(
            activityId: "match-1", userId: "alice", deviceId: "d1", token: apnsToken(9)))
        #expect(token.lastSeenAt == f.clock.now() && token.environment == .production)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.lastSeenAt == f.clock.now())
        _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
            activityId: "match-1", userId: "alice", deviceId: "fresh", token: apnsToken(10)))
        #expect(try await f.store.device(userId: "alice", deviceId: "fresh")?.activityCount == 1)
    }

    @Test func invalidPushToStartOrActivityTokenNamesTheTokenField() async throws {
        let f = try makeStore(); defer { f.close() }
        let p2s = await registryError {
            _ = try await f.store.registerPushToStartToken(PushToStartRegistration(userId: "alice", deviceId: "d1", token: "abc"))
        }
        let activity = await registryError {
            _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
                activityId: "m", userId: "alice", deviceId: "d1", token: "zz"))
        }
        #expect(p2s == .invalidField(field: "token", message: Identifier.Problem.oddLength.message))
        #expect(activity == .invalidField(field: "token", message: Identifier.Problem.notHex.message))
        #expect(try await f.store.device(userId: "alice", deviceId: "d1") == nil)
    }
}
