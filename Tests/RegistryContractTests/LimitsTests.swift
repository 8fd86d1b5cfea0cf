import Foundation
import RegistryCore
import RegistryTestSupport
import Testing

/// What one caller can store is bounded (docs/security.md "Limits one
/// caller cannot exceed"): activity tokens per device, tombstones per user,
/// and ids compared as bytes.
struct LimitsTests {
    private func registerActivity(_ store: any RegistryStore, _ activity: String, token: Int,
                                  user: String = "alice", device: String = "d1") async throws {
        _ = try await store.registerActivityToken(ActivityTokenRegistration(
            activityId: activity, userId: user, deviceId: device, token: apnsToken(token)))
    }

    @Test func activityTokensPerDeviceAreCappedByEvictingTheLeastRecentlySeen() async throws {
        let f = try makeStore { $0.limits.maxActivitiesPerDevice = 3 }; defer { f.close() }
        for i in 0..<3 {
            try await registerActivity(f.store, "match-\(i)", token: 100 + i)
            f.clock.advance(seconds: 1)
        }
        try await registerActivity(f.store, "match-0", token: 100)
        f.clock.advance(seconds: 1)
        try await registerActivity(f.store, "match-3", token: 103)
        #expect(try await f.store.allActivityTokens("match-1").isEmpty)
        for activity in ["match-0", "match-2", "match-3"] {
            #expect(try await f.store.allActivityTokens(activity).count == 1)
        }
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.activityCount == 3)
        #expect(try await f.store.stats().activityTokens == 3)
        #expect(try await f.check().isEmpty)
    }

    @Test func theActivityCapHoldsUnderAFloodFromOneUser() async throws {
        let f = try makeStore(); defer { f.close() }
        for i in 0..<300 { try await registerActivity(f.store, "flood-\(i)", token: 1_000 + i) }
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.activityCount == 32)
        #expect(try await f.store.stats().activityTokens == 32)
        try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: nil)
        #expect(try await f.store.stats().activityTokens == 0)
        #expect(try await f.check().isEmpty)
    }

    @Test func activityCountStaysRightThroughEveryChange() async throws {
        let f = try makeStore(); defer { f.close() }
        for i in 0..<4 { try await registerActivity(f.store, "m\(i)", token: 10 + i) }
        try await registerActivity(f.store, "m0", token: 20)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.activityCount == 4)
        try await f.store.removeActivityToken(activityId: "m1", userId: "alice", deviceId: "d1")
        try await f.store.removeActivityToken(activityId: "m1", userId: "alice", deviceId: "d1")
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.activityCount == 3)
        #expect(try await f.store.removeToken(apnsToken(12), reason: .unregistered, registeredBefore: nil) == 1)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.activityCount == 2)
        try await registerActivity(f.store, "m3", token: 13, device: "d2")
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.activityCount == 1)
        #expect(try await f.store.device(userId: "alice", deviceId: "d2")?.activityCount == 1)
        try await f.store.register("alice", "d1", token: 1)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.activityCount == 1)
        #expect(try await f.check().isEmpty)
    }

    @Test func tombstonesPerUserAreCappedByDroppingTheOldest() async throws {
        let f = try makeStore(maxDevicesPerUser: 2); defer { f.close() }
        for i in 0..<7 {
            try await f.store.signOut(userId: "alice", deviceId: "ghost-\(i)", sequence: 5)
            f.clock.advance(seconds: 1)
        }
        try await f.store.signOut(userId: "bob", deviceId: "ghost-0", sequence: 5)
        #expect(try await f.store.stats().tombstones == 5)
        #expect(try await f.store.register("alice", "ghost-2", sequence: 1).created)
        #expect(await registryError { try await f.store.register("alice", "ghost-3", sequence: 1) } == .staleWrite)
        #expect(await registryError { try await f.store.register("bob", "ghost-0", sequence: 1) } == .staleWrite)
        #expect(try await f.check().isEmpty)
    }

    @Test func aRepeatedSignOutRefreshesItsTombstoneWithoutCountingTwice() async throws {
        let f = try makeStore(maxDevicesPerUser: 1); defer { f.close() }
        try await f.store.signOut(userId: "alice", deviceId: "a", sequence: 1)
        f.clock.advance(seconds: 1)
        try await f.store.signOut(userId: "alice", deviceId: "b", sequence: 1)
        f.clock.advance(seconds: 1)
        try await f.store.signOut(userId: "alice", deviceId: "a", sequence: 2)
        f.clock.advance(seconds: 1)
        try await f.store.signOut(userId: "alice", deviceId: "c", sequence: 1)
        #expect(try await f.store.stats().tombstones == 2)
        #expect(await registryError { try await f.store.register("alice", "a", sequence: 2) } == .staleWrite)
        #expect(try await f.store.register("alice", "b", sequence: 1).created)
    }

    @Test func canonicallyEquivalentDeviceIdsAreTwoDevicesAndATokenHasOneOwner() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "K-1", token: 1)
        try await f.store.register("alice", "\u{212A}-1", token: 1)
        let devices = try await f.store.devices(userId: "alice")
        #expect(devices.count == 1)
        #expect(Array(devices.first?.deviceId.utf8 ?? "".utf8) == Array("\u{212A}-1".utf8))
        #expect(try await f.store.stats().pushTokens == 1)
        #expect(try await f.check().isEmpty)
    }

    @Test func canonicallyEquivalentUsersAreTwoUsersInALookup() async throws {
        let nfc = "caf\u{E9}", nfd = "cafe\u{301}"
        let f = try makeStore(); defer { f.close() }
        try await f.store.register(nfc, "d1", token: 1)
        try await f.store.register(nfd, "d2", token: 2)
        let found = try await f.store.devices(userIds: [nfc, nfd])
        #expect(found.count == 2)
        let byBytes = Dictionary(uniqueKeysWithValues: found.map { (Array($0.userId.utf8), $0.devices.map(\.deviceId)) })
        #expect(byBytes[Array(nfc.utf8)] == ["d1"])
        #expect(byBytes[Array(nfd.utf8)] == ["d2"])
        #expect(try await f.store.devices(userIds: [nfc, nfc]).count == 1)
    }

    @Test func canonicallyEquivalentActivityIdsAreTwoActivities() async throws {
        let f = try makeStore(); defer { f.close() }
        try await registerActivity(f.store, "K-1", token: 1)
        try await registerActivity(f.store, "\u{212A}-1", token: 1)
        #expect(try await f.store.allActivityTokens("K-1").isEmpty)
        #expect(try await f.store.allActivityTokens("\u{212A}-1").count == 1)
        #expect(try await f.check().isEmpty)
    }

    @Test func versionsAreBoundedInUTF8BytesNotCharacters() {
        #expect(Identifier.checkVersion(String(repeating: "9", count: 32)) == nil)
        #expect(Identifier.checkVersion(String(repeating: "9", count: 33)) == .tooLong)
        #expect(Identifier.checkVersion("e" + String(repeating: "\u{301}", count: 2_000)) == .tooLong)
        #expect(Identifier.checkVersion(String(repeating: "\u{E9}", count: 17)) == .tooLong)
    }
}
