import Foundation
import RegistryCore
import RegistryTestSupport
import Testing

/// `DeliveryStore`: what an enqueue stores, how it reads back, and the idempotency key.
struct DeliveryEnqueueTests {
    @Test func storesTheNotificationAndEveryDeliveryAsGiven() async throws {
        let f = try makeStore(); defer { f.close() }
        var (notification, deliveries) = notificationRecords(holders: [("alice", "d1"), ("bob", "d2"), ("carol", "d3")],
                                                             now: f.clock.now(), idempotencyKey: "k1")
        notification.collapseId = "scores"
        deliveries[1].target = DeliveryTarget(userId: "bob", appId: Identifier.defaultAppId, deviceId: "d2",
                                              kind: .activity, activityId: "match-7")
        deliveries[1].environment = .sandbox
        deliveries[2].platform = .fcm
        deliveries[2].state = .failed
        deliveries[2].reason = DeliveryReason.platformNotConfigured
        deliveries[2].status = 410
        notification.counts = DeliveryCounts()
        for delivery in deliveries { notification.counts.move(from: nil, to: delivery.state) }

        let outcome = try await f.deliveries.enqueue(notification, deliveries)
        #expect(outcome.isAccepted && outcome.record == notification)
        #expect(try await f.deliveries.notification(id: notification.id) == notification)
        #expect(try await f.deliveries.deliveries(notificationId: notification.id, from: 0, limit: 10) == deliveries)
        let stored = try #require(try await f.deliveries.notification(id: notification.id))
        #expect(stored.counts[.queued] == 2 && stored.counts[.failed] == 1 && stored.counts.total == 3)
    }

    @Test func acceptsWhatTheIntakeResolvedWithCounts() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.register("alice", "d2", token: 2)
        let outcome = try await f.notify(.user("alice"))
        #expect(outcome.isAccepted)
        let notification = try #require(try await f.deliveries.notification(id: outcome.record.id))
        #expect(notification.counts[.queued] == 2 && notification.counts.total == 2)
        #expect(notification.createdAt == f.clock.now() && notification.appId == Identifier.defaultAppId)
        let deliveries = try await f.allDeliveries(notification.id)
        #expect(deliveries.map(\.index) == [0, 1])
        #expect(Set(deliveries.map(\.tokenFingerprint)) == Set([1, 2].map { HistoryEvent.fingerprint(of: apnsToken($0)) }))
        #expect(deliveries.allSatisfy { $0.state == .queued && $0.notBefore == f.clock.now() && $0.attempts == 0 && $0.claimedAt == nil })
    }

    @Test func pagesFromAnIndex() async throws {
        let f = try makeStore(); defer { f.close() }
        let (notification, deliveries) = notificationRecords(holders: (0..<5).map { ("u\($0)", "d") }, now: f.clock.now())
        _ = try await f.deliveries.enqueue(notification, deliveries)
        let id = notification.id
        #expect(try await f.deliveries.deliveries(notificationId: id, from: 2, limit: 2).map(\.index) == [2, 3])
        #expect(try await f.deliveries.deliveries(notificationId: id, from: 4, limit: 10).map(\.index) == [4])
        #expect(try await f.deliveries.deliveries(notificationId: id, from: 5, limit: 10).isEmpty)
        #expect(try await f.deliveries.deliveries(notificationId: id, from: 0, limit: 0).isEmpty)
    }

    @Test func storesTenThousandDeliveriesInOneEnqueue() async throws {
        let f = try makeStore(); defer { f.close() }
        let (notification, deliveries) = notificationRecords(holders: (0..<10_000).map { ("u\($0)", "d") }, now: f.clock.now())
        _ = try await f.deliveries.enqueue(notification, deliveries)
        let stored = try await f.allDeliveries(notification.id, pageSize: 3_000)
        #expect(stored.count == 10_000 && stored == deliveries)
        #expect(try await f.deliveries.queueStats() == DeliveryQueueStats(queued: 10_000, sending: 0, oldestDue: f.clock.now()))
    }

    @Test func unknownAndMalformedIdsFindNothing() async throws {
        let f = try makeStore(); defer { f.close() }
        let other = UUID().uuidString.lowercased()
        #expect(try await f.deliveries.notification(id: other) == nil)
        #expect(try await f.deliveries.notification(id: "not-a-uuid") == nil)
        #expect(try await f.deliveries.deliveries(notificationId: other, from: 0, limit: 10).isEmpty)
        #expect(try await f.deliveries.deliveries(notificationId: "not-a-uuid", from: 0, limit: 10).isEmpty)
        #expect(try await f.deliveries.cancel(notificationId: other) == nil)
        #expect(try await f.deliveries.cancel(notificationId: "x'; DROP TABLE x; --") == nil)
    }

    @Test func theSameKeyAndDigestAnswerTheFirstNotificationAsItIsNow() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        let first = try await f.notify(.user("alice"), idempotencyKey: "k", digest: [1, 2])
        _ = try await f.deliveries.cancel(notificationId: first.record.id)
        f.clock.advance(seconds: 3_600)
        let again = try await f.notify(.user("alice"), idempotencyKey: "k", digest: [1, 2])
        #expect(!again.isAccepted)
        #expect(again.record.id == first.record.id && again.record.counts[.cancelled] == 1)
        #expect(try await f.deliveries.queueStats().queued == 0)
    }

    @Test func theSameKeyWithAnotherDigestIsRefused() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        _ = try await f.notify(.user("alice"), idempotencyKey: "k", digest: [1])
        await #expect(throws: DeliveryError.idempotencyKeyReused) {
            try await f.notify(.user("alice"), idempotencyKey: "k", digest: [2])
        }
        #expect(try await f.deliveries.queueStats().queued == 1)
        #expect(try await f.notify(.user("alice"), idempotencyKey: "other", digest: [2]).isAccepted)
    }

    /// Two apps of one registry may pick the same key: each answers its own
    /// notification, and neither is refused for the other's body.
    @Test func idempotencyKeysAreScopedToTheirApp() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        let scores = try await f.notify(.user("alice"), idempotencyKey: "goal-42", digest: [1])
        let news = try await f.notify(.user("alice"), appId: "com.example.news", idempotencyKey: "goal-42", digest: [2])
        #expect(news.isAccepted && news.record.id != scores.record.id)
        #expect(try await f.notify(.user("alice"), idempotencyKey: "goal-42", digest: [1]).record.id == scores.record.id)
        let again = try await f.notify(.user("alice"), appId: "com.example.news", idempotencyKey: "goal-42", digest: [2])
        #expect(!again.isAccepted && again.record.id == news.record.id)
        await #expect(throws: DeliveryError.idempotencyKeyReused) {
            try await f.notify(.user("alice"), appId: "com.example.news", idempotencyKey: "goal-42", digest: [1])
        }
        // The sweep takes each app's key with its notification.
        f.clock.advance(seconds: 8 * 86_400)
        while try await f.deliveries.sweepNotifications(createdBefore: f.clock.now()) > 0 {}
        #expect(try await f.notify(.user("alice"), appId: "com.example.news", idempotencyKey: "goal-42", digest: [3]).isAccepted)
        #expect(try await f.notify(.user("alice"), idempotencyKey: "goal-42", digest: [3]).isAccepted)
    }

    @Test func aKeyOlderThanADayStartsANewNotification() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        let first = try await f.notify(.user("alice"), expiresIn: 3 * 86_400, idempotencyKey: "k", digest: [1])
        f.clock.advance(seconds: 86_400 - 1)
        #expect(try await f.notify(.user("alice"), idempotencyKey: "k", digest: [1]).record.id == first.record.id)
        f.clock.advance(seconds: 2)
        let second = try await f.notify(.user("alice"), idempotencyKey: "k", digest: [2])
        #expect(second.isAccepted && second.record.id != first.record.id)
        let third = try await f.notify(.user("alice"), idempotencyKey: "k", digest: [2])
        #expect(!third.isAccepted && third.record.id == second.record.id)
        #expect(try await f.deliveries.notification(id: first.record.id) != nil)
    }

    @Test func concurrentEnqueuesWithOneKeyStoreOneNotification() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        let intake = f.intake, request = f.request(.user("alice"), idempotencyKey: "k", digest: [7])
        let outcomes = try await withThrowingTaskGroup(of: EnqueueOutcome.self) { group in
            for _ in 0..<8 { group.addTask { try await intake.accept(request) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter(\.isAccepted).count == 1)
        #expect(Set(outcomes.map(\.record.id)).count == 1)
        #expect(try await f.deliveries.queueStats().queued == 1)
    }
}
