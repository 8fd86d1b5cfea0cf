import RegistryCore
import RegistryTestSupport
import Testing

/// The reads behind the operator console (docs/api.md "Operator reads"): an
/// activity's token counts, removals over time, recent notifications. Each
/// answers the same on every engine.
struct OperatorReadsTests {
    private static let minute: Int64 = 60
    private static let hour: Int64 = 3_600

    @Test func activityTokenCountsAreByAppAndEnvironmentAndOpenNoToken() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.registerActivity("m", "alice", "d1", token: 1)
        try await f.store.registerActivity("m", "bob", "d1", token: 2, environment: .sandbox)
        try await f.store.registerActivity("m", "carol", "d1", token: 3, appId: "com.example.scores")
        try await f.store.registerActivity("m", "dave", "d1", token: 4)
        try await f.store.registerActivity("other", "erin", "d1", token: 5)
        #expect(try await f.store.activityTokenCounts(activityId: "m") == [
            ActivityTokenCount(appId: "com.example.scores", environment: .production, tokens: 1),
            ActivityTokenCount(appId: "default", environment: .production, tokens: 2),
            ActivityTokenCount(appId: "default", environment: .sandbox, tokens: 1),
        ])
        #expect(try await f.store.correctEnvironment(token: apnsToken(4), environment: .sandbox) == 1)
        #expect(try await f.store.removeToken(apnsToken(3), reason: .unregistered, registeredBefore: nil) == 1)
        #expect(try await f.store.activityTokenCounts(activityId: "m") == [
            ActivityTokenCount(appId: "default", environment: .production, tokens: 1),
            ActivityTokenCount(appId: "default", environment: .sandbox, tokens: 2),
        ])
        #expect(try await f.store.activityTokenCounts(activityId: "nobody-watches").isEmpty)
        // An activity id that is a prefix of another's counts only its own.
        #expect(try await f.store.activityTokenCounts(activityId: "othe").isEmpty)
    }

    /// Removals at 0:10 (feedback Unregistered), 1:10 (sign-out, feedback
    /// BadDeviceToken) and 3:00 (permission withdrawn) after `start`;
    /// registrations and rotations are not removals.
    private func removals(_ f: StoreFixture) async throws -> Timestamp {
        let start = f.clock.now()
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.register("alice", "d2", token: 2)
        try await f.store.register("bob", "d1", token: 3)
        try await f.store.register("bob", "d1", token: 5)
        f.clock.advance(seconds: 10 * Self.minute)
        #expect(try await f.store.removeToken(apnsToken(1), reason: .unregistered, registeredBefore: nil) == 1)
        f.clock.advance(seconds: Self.hour)
        try await f.store.signOut(userId: "alice", deviceId: "d2", sequence: nil)
        #expect(try await f.store.removeToken(apnsToken(5), reason: .badDeviceToken, registeredBefore: nil) == 1)
        f.clock.advance(seconds: 2 * Self.hour - 10 * Self.minute)
        try await f.store.register("carol", "d1", token: 4)
        _ = try await f.store.registerDevice(DeviceRegistration(userId: "carol", deviceId: "d1", pushToken: .remove))
        return start
    }

    @Test func removalCountsAreBucketedByReasonWithinTheWindow() async throws {
        let f = try makeStore(); defer { f.close() }
        let start = try await removals(f)
        let at = { (seconds: Int64) in start.adding(seconds: seconds) }
        let hourly = try await f.store.removalCounts(from: start, to: at(4 * Self.hour), bucket: .seconds(3_600))
        #expect(Set(hourly) == [
            RemovalCount(bucketStart: start, reason: .feedback, feedbackReason: .unregistered, count: 1),
            RemovalCount(bucketStart: at(Self.hour), reason: .signOut, feedbackReason: nil, count: 1),
            RemovalCount(bucketStart: at(Self.hour), reason: .feedback, feedbackReason: .badDeviceToken, count: 1),
            RemovalCount(bucketStart: at(3 * Self.hour), reason: .permissionWithdrawn, feedbackReason: nil, count: 1),
        ])
        #expect(hourly.count == 4)
        let daily = try await f.store.removalCounts(from: start, to: at(24 * Self.hour), bucket: .seconds(86_400))
        #expect(Set(daily) == [
            RemovalCount(bucketStart: start, reason: .feedback, feedbackReason: .unregistered, count: 1),
            RemovalCount(bucketStart: start, reason: .signOut, feedbackReason: nil, count: 1),
            RemovalCount(bucketStart: start, reason: .feedback, feedbackReason: .badDeviceToken, count: 1),
            RemovalCount(bucketStart: start, reason: .permissionWithdrawn, feedbackReason: nil, count: 1),
        ])
    }

    @Test func removalCountsIncludeTheWindowsStartAndExcludeItsEnd() async throws {
        let f = try makeStore(); defer { f.close() }
        let start = try await removals(f)
        let at = { (seconds: Int64) in start.adding(seconds: seconds) }
        // From the first removal's very millisecond to the next ones' (excluded).
        let window = try await f.store.removalCounts(from: at(10 * Self.minute), to: at(Self.hour + 10 * Self.minute),
                                                     bucket: .seconds(3_600))
        #expect(window == [RemovalCount(bucketStart: at(10 * Self.minute), reason: .feedback, feedbackReason: .unregistered,
                                        count: 1)])
        // Buckets start at `from`, not at a whole hour.
        let shifted = try await f.store.removalCounts(from: at(30 * Self.minute), to: at(3 * Self.hour),
                                                      bucket: .seconds(3_600))
        #expect(Set(shifted) == [
            RemovalCount(bucketStart: at(30 * Self.minute), reason: .signOut, feedbackReason: nil, count: 1),
            RemovalCount(bucketStart: at(30 * Self.minute), reason: .feedback, feedbackReason: .badDeviceToken, count: 1),
        ])
        #expect(try await f.store.removalCounts(from: at(4 * Self.hour), to: at(5 * Self.hour), bucket: .seconds(3_600)).isEmpty)
        #expect(try await f.store.removalCounts(from: at(Self.hour), to: at(Self.hour), bucket: .seconds(3_600)).isEmpty)
    }

    @Test func recentNotificationsAreNewestFirstAndPageAfterAPosition() async throws {
        let f = try makeStore(); defer { f.close() }
        var stored: [NotificationRecord] = []
        for step in 0..<5 {
            // Two notifications share each of the last two milliseconds: their ids order them.
            if step == 1 || step == 3 { f.clock.advance(milliseconds: 1) }
            let (notification, deliveries) = notificationRecords(holders: [("alice", "d1")], now: f.clock.now())
            _ = try await f.deliveries.enqueue(notification, deliveries)
            stored.append(notification)
        }
        let newestFirst = stored.sorted { ($0.createdAt, $0.id) > ($1.createdAt, $1.id) }
        let first = try await f.deliveries.recentNotifications(after: nil, limit: 3)
        #expect(first.map(\.id) == newestFirst.prefix(3).map(\.id))
        #expect(first.first?.counts[.queued] == 1)
        let last = try #require(first.last)
        let rest = try await f.deliveries.recentNotifications(after: NotificationPosition(createdAt: last.createdAt, id: last.id),
                                                              limit: 3)
        #expect(rest.map(\.id) == newestFirst.suffix(2).map(\.id))
        #expect(try await f.deliveries.recentNotifications(after: nil, limit: 10).count == 5)
        let oldest = try #require(newestFirst.last)
        #expect(try await f.deliveries.recentNotifications(after: NotificationPosition(createdAt: oldest.createdAt, id: oldest.id),
                                                           limit: 3).isEmpty)
    }
}
