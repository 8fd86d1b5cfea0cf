import Foundation
import RegistryCore
import RegistryTestSupport
import Testing

/// `DeliveryStore`: cancelling, abandoned claims, the sweep of old notifications, and the queue's shape.
struct DeliveryQueueMaintenanceTests {
    /// What `--max-queued-deliveries` compares: `queued` and `sending`, every notification's.
    @Test func pendingDeliveriesCountsQueuedAndSending() async throws {
        let f = try makeStore(); defer { f.close() }
        for user in ["a", "b", "c"] { try await f.store.register(user, "d", token: user.utf8.first.map(Int.init)) }
        #expect(try await f.deliveries.pendingDeliveries() == 0)
        _ = try await f.notify(.users(["a", "b"]))
        f.clock.advance(seconds: 1)
        let single = try await f.notify(.user("c")).record.id
        #expect(try await f.deliveries.pendingDeliveries() == 3)
        let claimed = try await f.deliveries.claim(limit: 2)
        #expect(try await f.deliveries.pendingDeliveries() == 3, "sending ones still count")
        try await f.deliveries.settle(claimed.map { settlement($0, .delivered, status: 200) })
        #expect(try await f.deliveries.pendingDeliveries() == 1)
        _ = try await f.deliveries.cancel(notificationId: single)
        #expect(try await f.deliveries.pendingDeliveries() == 0)
    }

    private static let day: Int64 = 86_400

    @Test func cancelTurnsOnlyQueuedDeliveriesIntoCancelled() async throws {
        let f = try makeStore(); defer { f.close() }
        for device in ["d1", "d2", "d3"] { try await f.store.register("alice", device, token: Int(device.utf8.last!)) }
        let id = try await f.notify(.user("alice")).record.id
        let claimed = try await f.deliveries.claim(limit: 2)
        try await f.deliveries.settle([settlement(claimed[0], .delivered, status: 200)])
        f.clock.advance(seconds: 1)
        let cancelled = try #require(try await f.deliveries.cancel(notificationId: id))
        #expect(cancelled.counts[.cancelled] == 1 && cancelled.counts[.delivered] == 1 && cancelled.counts[.sending] == 1)
        #expect(cancelled.counts[.queued] == 0)
        #expect(try await f.deliveries.notification(id: id) == cancelled)
        let deliveries = try await f.allDeliveries(id)
        let states = deliveries.map(\.state)
        #expect(states.filter { $0 == .cancelled }.count == 1 && states.contains(.sending) && states.contains(.delivered))
        #expect(deliveries.first { $0.state == .cancelled }?.updatedAt == f.clock.now())
        #expect(try await f.deliveries.claim(limit: 10).isEmpty)
        #expect(try await f.deliveries.cancel(notificationId: id) == cancelled)
    }

    @Test func abandonedClaimsBecomeUnknownAndTheirSettlementIsIgnored() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.register("bob", "d1", token: 2)
        let first = try await f.notify(.user("alice")).record.id
        let old = try await f.deliveries.claim(limit: 10)
        f.clock.advance(seconds: 60)
        let cutoff = f.clock.now()
        let second = try await f.notify(.user("bob")).record.id
        let recent = try await f.deliveries.claim(limit: 10)
        f.clock.advance(seconds: 1)
        #expect(try await f.deliveries.abandonClaims(claimedBefore: cutoff) == 1)
        #expect(try await f.deliveries.abandonClaims(claimedBefore: cutoff) == 0)
        let abandoned = try #require(try await f.allDeliveries(first).first)
        #expect(abandoned.state == .unknown && abandoned.reason == DeliveryReason.senderStopped)
        #expect(abandoned.claimedAt == nil && abandoned.updatedAt == f.clock.now())
        #expect(try await f.deliveries.notification(id: first)?.counts[.unknown] == 1)
        try await f.deliveries.settle([settlement(old[0], .delivered, status: 200)])
        #expect(try await f.allDeliveries(first).first == abandoned)
        #expect(try await f.allDeliveries(second).first?.state == .sending)
        #expect(recent.count == 1)
        #expect(try await f.deliveries.queueStats().sending == 1)
    }

    @Test func sweepRemovesOnlyOldFinishedNotificationsWithTheirKeys() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        let finished = try await f.notify(.user("alice"), idempotencyKey: "k", digest: [1]).record.id
        _ = try await f.deliveries.cancel(notificationId: finished)
        let unfinished = try await f.notify(.user("alice"), expiresIn: 30 * Self.day).record.id
        f.clock.advance(seconds: 7 * Self.day)
        let cutoff = f.clock.now()
        let recent = try await f.notify(.user("alice")).record.id
        _ = try await f.deliveries.cancel(notificationId: recent)
        #expect(try await f.deliveries.sweepNotifications(createdBefore: cutoff) == 1)
        #expect(try await f.deliveries.sweepNotifications(createdBefore: cutoff) == 0)
        #expect(try await f.deliveries.notification(id: finished) == nil)
        #expect(try await f.deliveries.deliveries(notificationId: finished, from: 0, limit: 10).isEmpty)
        #expect(try await f.deliveries.notification(id: unfinished)?.counts[.queued] == 1)
        #expect(try await f.deliveries.notification(id: recent) != nil)
        #expect(try await f.notify(.user("alice"), idempotencyKey: "k", digest: [2]).isAccepted)
    }

    @Test func manyUnfinishedNotificationsDoNotHoldBackAFinishedOne() async throws {
        let f = try makeStore(); defer { f.close() }
        for _ in 0..<70 {
            let (notification, deliveries) = notificationRecords(holders: [("alice", "d1")], now: f.clock.now(),
                                                                 expiresIn: 30 * Self.day)
            _ = try await f.deliveries.enqueue(notification, deliveries)
            f.clock.advance(milliseconds: 1)
        }
        let (finished, deliveries) = notificationRecords(holders: [("alice", "d1")], now: f.clock.now())
        _ = try await f.deliveries.enqueue(finished, deliveries)
        _ = try await f.deliveries.cancel(notificationId: finished.id)
        f.clock.advance(seconds: 7 * Self.day)
        #expect(try await f.deliveries.sweepNotifications(createdBefore: f.clock.now()) == 1)
        #expect(try await f.deliveries.notification(id: finished.id) == nil)
        #expect(try await f.deliveries.queueStats().queued == 70)
    }

    @Test func sweepKeepsTheKeyOfANewerNotification() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        let first = try await f.notify(.user("alice"), idempotencyKey: "k", digest: [1]).record.id
        _ = try await f.deliveries.cancel(notificationId: first)
        f.clock.advance(seconds: 2 * Self.day)
        let second = try await f.notify(.user("alice"), idempotencyKey: "k", digest: [2]).record
        #expect(try await f.deliveries.sweepNotifications(createdBefore: f.clock.now()) == 1)
        await #expect(throws: DeliveryError.idempotencyKeyReused) {
            try await f.notify(.user("alice"), idempotencyKey: "k", digest: [3])
        }
        #expect(try await f.notify(.user("alice"), idempotencyKey: "k", digest: [2]).record.id == second.id)
    }

    @Test func queueStatsCountQueuedAndSendingWithTheOldestDue() async throws {
        let f = try makeStore(); defer { f.close() }
        #expect(try await f.deliveries.queueStats() == DeliveryQueueStats(queued: 0, sending: 0, oldestDue: nil))
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.register("alice", "d2", token: 2)
        let oldest = f.clock.now()
        try await f.notify(.user("alice"))
        f.clock.advance(seconds: 5)
        try await f.notify(.user("alice"))
        #expect(try await f.deliveries.queueStats() == DeliveryQueueStats(queued: 4, sending: 0, oldestDue: oldest))
        _ = try await f.deliveries.claim(limit: 3)
        #expect(try await f.deliveries.queueStats() == DeliveryQueueStats(queued: 1, sending: 3, oldestDue: f.clock.now()))
    }
}
