import RegistryCore
import RegistryTestSupport
import Testing

/// `POST /v1/devices`: create, update, rotate, keep, remove, validate.
struct LaunchUpsertTests {
    @Test func createsWithDefaultsAndReportsCreated() async throws {
        let f = try makeStore(); defer { f.close() }
        let outcome = try await f.store.register("alice", "d1", token: 1)
        #expect(outcome.created)
        let d = outcome.device
        #expect(d.platform == .apns && d.environment == .production && d.sequence == nil)
        #expect(d.createdAt == f.clock.now() && d.lastSeenAt == f.clock.now())
        #expect(d.pushToken == StoredToken(token: apnsToken(1), environment: .production, updatedAt: f.clock.now()))
        #expect(try await f.store.device(userId: "alice", deviceId: "d1") == d)
    }

    @Test func sameBodyAgainChangesOnlyLastSeenAtAndTokenUpdatedAt() async throws {
        let f = try makeStore(); defer { f.close() }
        let first = try await f.store.register("alice", "d1", token: 1).device
        f.clock.advance(seconds: 60)
        let second = try await f.store.register("alice", "d1", token: 1)
        #expect(!second.created)
        var expected = first
        expected.lastSeenAt = f.clock.now()
        expected.pushToken?.updatedAt = f.clock.now()
        #expect(second.device == expected)
    }

    @Test func omittedFieldsKeepStoredValues() async throws {
        let f = try makeStore(); defer { f.close() }
        _ = try await f.store.registerDevice(DeviceRegistration(
            userId: "alice", deviceId: "d1", pushToken: .set(apnsToken(1)), environment: .sandbox,
            osVersion: "18.2", appVersion: "2.1.0"))
        f.clock.advance(seconds: 5)
        let d = try await f.store.register("alice", "d1").device
        #expect(d.environment == .sandbox && d.osVersion == "18.2" && d.appVersion == "2.1.0")
        #expect(d.pushToken?.token == apnsToken(1))
        #expect(d.pushToken?.updatedAt == f.clock.now().adding(seconds: -5))
    }

    @Test func newPushTokenReplacesTheOldOneInPlace() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        let rotated = try await f.store.register("alice", "d1", token: 2).device
        #expect(rotated.pushToken?.token == apnsToken(2))
        // The old token is no longer owned by d1: another device registering it takes nothing from d1.
        try await f.store.register("alice", "d2", token: 1)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToken?.token == apnsToken(2))
        #expect(try await f.store.stats().pushTokens == 2)
    }

    @Test func nullPushTokenRemovesIt() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        let d = try await f.store.registerDevice(DeviceRegistration(userId: "alice", deviceId: "d1", pushToken: .remove)).device
        #expect(d.pushToken == nil)
        #expect(try await f.store.stats().pushTokens == 0)
        #expect(try await f.store.removeToken(apnsToken(1), reason: .unregistered, registeredBefore: nil) == 0)
    }

    @Test func apnsTokenIsStoredLowercase() async throws {
        let f = try makeStore(); defer { f.close() }
        let d = try await f.store.registerDevice(DeviceRegistration(
            userId: "alice", deviceId: "d1", pushToken: .set(apnsToken(0xBEEF).uppercased()))).device
        #expect(d.pushToken?.token == apnsToken(0xbeef))
    }

    @Test func invalidPushTokenIsAnInvalidFieldAndWritesNothing() async throws {
        let f = try makeStore(); defer { f.close() }
        let error = await registryError {
            _ = try await f.store.registerDevice(DeviceRegistration(userId: "alice", deviceId: "d1", pushToken: .set("xyz")))
        }
        #expect(error == .invalidField(field: "pushToken", message: Identifier.Problem.notHex.message))
        #expect(try await f.store.device(userId: "alice", deviceId: "d1") == nil)
    }

    @Test func pushTokenIsValidatedAgainstTheStoredPlatform() async throws {
        let f = try makeStore(); defer { f.close() }
        let fcm = "fcm:token_With.Chars-1"
        _ = try await f.store.registerDevice(DeviceRegistration(userId: "alice", deviceId: "d1", pushToken: .set(fcm), platform: .fcm))
        let kept = try await f.store.registerDevice(DeviceRegistration(userId: "alice", deviceId: "d1", pushToken: .set(fcm + "2")))
        #expect(kept.device.platform == .fcm && kept.device.pushToken?.token == fcm + "2")
        let error = await registryError {
            _ = try await f.store.registerDevice(DeviceRegistration(userId: "bob", deviceId: "d1", pushToken: .set(fcm)))
        }
        #expect(error == .invalidField(field: "pushToken", message: Identifier.Problem.notHex.message))
    }

    @Test func omittedTokenKeepsItsUpdatedAt() async throws {
        let f = try makeStore(); defer { f.close() }
        let registeredAt = f.clock.now()
        try await f.store.register("alice", "d1", token: 1)
        f.clock.advance(seconds: 100)
        let d = try await f.store.register("alice", "d1").device
        #expect(d.pushToken?.updatedAt == registeredAt)
        #expect(d.lastSeenAt == f.clock.now())
    }

    @Test func listsMostRecentlySeenFirstTiesByDeviceId() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "c")
        try await f.store.register("alice", "b")
        f.clock.advance(seconds: 1)
        try await f.store.register("alice", "z")
        try await f.store.register("alice", "a")
        f.clock.advance(seconds: 1)
        try await f.store.register("alice", "m")
        #expect(try await f.store.deviceIds("alice") == ["m", "a", "z", "b", "c"])
    }

    @Test func lookupOmitsUsersWithoutDevicesAndKeepsUsersApart() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1")
        try await f.store.register("alicex", "d2")
        let found = try await f.store.devices(userIds: ["alice", "nobody", "alicex"])
        #expect(found.map(\.userId) == ["alice", "alicex"])
        #expect(found.first?.devices.map(\.deviceId) == ["d1"])
        #expect(try await f.store.device(userId: "bob", deviceId: "d1") == nil)
    }

    /// The record a write answers with is the one stored: its tokens of
    /// every kind and its activity count, whatever the write changed.
    @Test func everyAnswerIsTheStoredRecord() async throws {
        let f = try makeStore(); defer { f.close() }
        func expectStored(_ answered: DeviceRecord, _ step: String) async throws {
            #expect(try await f.store.device(userId: "alice", deviceId: "d1") == answered, "\(step)")
        }
        try await expectStored(try await f.store.register("alice", "d1", token: 1).device, "created")
        try await expectStored(try await f.store.registerPushToStart("alice", "d1", token: 2), "push-to-start added")
        try await f.store.registerActivity("a1", "alice", "d1", token: 3)
        try await f.store.registerActivity("a2", "alice", "d1", token: 4)
        f.clock.advance(seconds: 1)
        let refreshed = try await f.store.register("alice", "d1", token: 1).device
        #expect(refreshed.activityCount == 2 && refreshed.pushToStartToken?.token == apnsToken(2))
        try await expectStored(refreshed, "same token")
        f.clock.advance(seconds: 1)
        try await expectStored(try await f.store.register("alice", "d1", token: 5).device, "token rotated")
        f.clock.advance(seconds: 1)
        try await expectStored(try await f.store.registerDevice(DeviceRegistration(
            userId: "alice", deviceId: "d1", environment: .sandbox)).device, "environment changed, token kept")
        f.clock.advance(seconds: 1)
        try await expectStored(try await f.store.registerPushToStart("alice", "d1", token: 6), "push-to-start rotated")
        try await expectStored(try await f.store.registerPushToStart("alice", "d1", token: 6), "push-to-start again")
        try await f.store.removeActivityToken(activityId: "a1", userId: "alice", appId: "default", deviceId: "d1")
        try await expectStored(try await f.store.register("alice", "d1", token: 5, sequence: 3).device, "one activity left")
        try await expectStored(try await f.store.register("alice", "d1", token: 5, sequence: 3).device, "replayed")
        // Another device takes d1's push token: d1 goes; d2's answer is its own stored record.
        let d2 = try await f.store.register("alice", "d2", token: 5).device
        #expect(try await f.store.device(userId: "alice", deviceId: "d2") == d2)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1") == nil)
        let removed = try await f.store.registerDevice(DeviceRegistration(userId: "alice", deviceId: "d2", pushToken: .remove))
        #expect(try await f.store.device(userId: "alice", deviceId: "d2") == removed.device)
    }

    @Test func identifiersOfAnyBytesAndMaximumLengthWork() async throws {
        let f = try makeStore(); defer { f.close() }
        let long = String(repeating: "é", count: 64)
        // PostgreSQL text cannot hold NUL (the HTTP layer refuses control
        // characters anyway); there, quotes and braces test the array literal.
        let odd = f.isLMDB ? "a\u{0}\u{1}b" : "a\"\\{b},"
        try await f.store.register(long, long, token: 1)
        try await f.store.register(odd, "d", token: 2)
        _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
            activityId: long, userId: long, deviceId: long, token: apnsToken(3)))
        #expect(try await f.store.device(userId: long, deviceId: long)?.activityCount == 1)
        #expect(try await f.store.deviceIds(odd) == ["d"])
        #expect(try await f.store.deviceIds("a") == [])
    }
}
