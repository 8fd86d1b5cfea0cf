import RegistryCore
import RegistryTestSupport
import Testing

/// APNs feedback: `removeToken(_:reason:registeredBefore:)`.
struct FeedbackTests {
    @Test func removesThePushTokenAndKeepsTheDevice() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        #expect(try await f.store.removeToken(apnsToken(1), reason: .unregistered, registeredBefore: nil) == 1)
        let d = try #require(try await f.store.device(userId: "alice", deviceId: "d1"))
        #expect(d.pushToken == nil)
        #expect(try await f.store.removeToken(apnsToken(1), reason: .unregistered, registeredBefore: nil) == 0)
    }

    @Test func matchesHexTokensCaseInsensitively() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 0xabc)
        #expect(try await f.store.removeToken(apnsToken(0xabc).uppercased(), reason: .badDeviceToken, registeredBefore: nil) == 1)
    }

    @Test func removesTheTokenWhereverItIsHeld() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 7)
        _ = try await f.store.registerPushToStartToken(PushToStartRegistration(userId: "alice", deviceId: "d2", token: apnsToken(7)))
        _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
            activityId: "m", userId: "bob", deviceId: "d3", token: apnsToken(7)))
        #expect(try await f.store.removeToken(apnsToken(7), reason: .deviceTokenNotForTopic, registeredBefore: nil) == 3)
        let stats = try await f.store.stats()
        #expect(stats.pushTokens == 0 && stats.pushToStartTokens == 0 && stats.activityTokens == 0 && stats.devices == 3)
    }

    @Test func fcmTokenMatchesAsSent() async throws {
        let f = try makeStore(); defer { f.close() }
        _ = try await f.store.registerDevice(DeviceRegistration(userId: "alice", deviceId: "d1", pushToken: .set("Fcm:Token"), platform: .fcm))
        #expect(try await f.store.removeToken("fcm:token", reason: .unregistered, registeredBefore: nil) == 0)
        #expect(try await f.store.removeToken("Fcm:Token", reason: .unregistered, registeredBefore: nil) == 1)
    }

    @Test func withTimestampRemovesOnlyTokensRegisteredStrictlyBefore() async throws {
        let f = try makeStore(); defer { f.close() }
        let registeredAt = f.clock.now()
        try await f.store.register("alice", "d1", token: 1)
        #expect(try await f.store.removeToken(apnsToken(1), reason: .unregistered, registeredBefore: registeredAt) == 0)
        #expect(try await f.store.removeToken(apnsToken(1), reason: .unregistered,
                                              registeredBefore: Timestamp(milliseconds: registeredAt.milliseconds + 1)) == 1)
    }

    @Test func tokenRegisteredAgainAfterTheFeedbackIsKept() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        let feedbackAt = f.clock.now().adding(seconds: 1)
        f.clock.advance(seconds: 2)
        try await f.store.register("alice", "d1", token: 1)
        _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
            activityId: "m", userId: "alice", deviceId: "d1", token: apnsToken(1)))
        #expect(try await f.store.removeToken(apnsToken(1), reason: .unregistered, registeredBefore: feedbackAt) == 0)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToken != nil)
    }
}
