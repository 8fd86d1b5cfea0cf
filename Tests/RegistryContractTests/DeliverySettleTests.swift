import Foundation
import RegistryCore
import RegistryTestSupport
import Testing

/// `DeliveryStore.settle`: a sender's decisions about its claims.
struct DeliverySettleTests {
    /// A store with one notification to alice's d1 and d2, both claimed.
    private func claimedTwo() async throws -> (StoreFixture, String, [ClaimedDelivery]) {
        let f = try makeStore()
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.register("alice", "d2", token: 2)
        let id = try await f.notify(.user("alice")).record.id
        let claimed = try await f.deliveries.claim(limit: 10).sorted { $0.delivery.index < $1.delivery.index }
        try #require(claimed.count == 2)
        return (f, id, claimed)
    }

    @Test func deliveredAndFailedAreFinalWithTheirAnswer() async throws {
        let (f, id, claimed) = try await claimedTwo(); defer { f.close() }
        f.clock.advance(seconds: 1)
        var delivered = settlement(claimed[0], .delivered, status: 200, requests: 2)
        delivered.environment = .sandbox
        try await f.deliveries.settle([delivered, settlement(claimed[1], .failed, status: 400, reason: "BadDeviceToken")])
        let deliveries = try await f.allDeliveries(id)
        #expect(deliveries[0].state == .delivered && deliveries[0].status == 200 && deliveries[0].attempts == 2)
        #expect(deliveries[0].environment == .sandbox && deliveries[0].claimedAt == nil && deliveries[0].updatedAt == f.clock.now())
        #expect(deliveries[1].state == .failed && deliveries[1].status == 400 && deliveries[1].reason == "BadDeviceToken")
        #expect(deliveries.allSatisfy { $0.retries == 0 })
        let notification = try #require(try await f.deliveries.notification(id: id))
        #expect(notification.counts[.delivered] == 1 && notification.counts[.failed] == 1 && notification.counts.isFinished)
        #expect(try await f.deliveries.queueStats() == DeliveryQueueStats(queued: 0, sending: 0, oldestDue: nil))
    }

    /// Cancel means stop: a delivery in flight when the notification is
    /// cancelled keeps its answer if the answer decided it, and is
    /// `cancelled` (never queued again) if it asked for a retry.
    /// APNs' `apns-unique-id` is kept with the delivery, and a later answer without one leaves it.
    @Test func theAPNsUniqueIdIsKept() async throws {
        let (f, id, claimed) = try await claimedTwo(); defer { f.close() }
        var retried = settlement(claimed[0], .queued, status: 429, requests: 1, retried: true, notBefore: f.clock.now())
        retried.apnsUniqueId = "5f7a8b2c-0000-4000-8000-00000000aaaa"
        try await f.deliveries.settle([retried, settlement(claimed[1], .delivered, status: 200)])
        let again = try #require(try await f.deliveries.claim(limit: 10).first)
        try await f.deliveries.settle([settlement(again, .delivered, status: 200)])
        let deliveries = try await f.allDeliveries(id)
        #expect(deliveries[0].apnsUniqueId == "5f7a8b2c-0000-4000-8000-00000000aaaa" && deliveries[0].state == .delivered)
        #expect(deliveries[1].apnsUniqueId == nil)
    }

    @Test func aRetrySettledAfterTheCancelIsCancelled() async throws {
        let (f, id, claimed) = try await claimedTwo(); defer { f.close() }
        let cancelled = try #require(try await f.deliveries.cancel(notificationId: id))
        #expect(cancelled.cancelled && cancelled.counts[.cancelled] == 0, "nothing was queued, but the notification is cancelled")
        let at = Timestamp(milliseconds: f.clock.now().milliseconds + 1_000)
        try await f.deliveries.settle([settlement(claimed[0], .queued, status: 429, reason: "TooManyRequests", requests: 1,
                                                  retried: true, notBefore: at),
                                       settlement(claimed[1], .delivered, status: 200)])
        let deliveries = try await f.allDeliveries(id)
        #expect(deliveries[0].state == .cancelled && deliveries[0].status == 429 && deliveries[0].attempts == 1)
        #expect(deliveries[1].state == .delivered, "an answer that decided the delivery stands")
        f.clock.advance(seconds: 5)
        #expect(try await f.deliveries.claim(limit: 10).isEmpty)
        let notification = try #require(try await f.deliveries.notification(id: id))
        #expect(notification.cancelled && notification.counts[.cancelled] == 1 && notification.counts[.delivered] == 1)
        #expect(notification.counts.isFinished)
        #expect(try await f.deliveries.queueStats() == DeliveryQueueStats(queued: 0, sending: 0, oldestDue: nil))
    }

    @Test func aRetryIsQueuedAgainUntilItsNotBeforeAndAccumulatesAttempts() async throws {
        let (f, id, claimed) = try await claimedTwo(); defer { f.close() }
        let at = Timestamp(milliseconds: f.clock.now().milliseconds + 2_000)
        try await f.deliveries.settle([settlement(claimed[0], .queued, status: 503, requests: 1, retried: true, notBefore: at),
                                       settlement(claimed[1], .unknown, reason: "timeout")])
        #expect(try await f.deliveries.queueStats() == DeliveryQueueStats(queued: 1, sending: 0, oldestDue: at))
        #expect(try await f.deliveries.notification(id: id)?.counts[.queued] == 1)
        f.clock.advance(milliseconds: 1_999)
        #expect(try await f.deliveries.claim(limit: 10).isEmpty)
        f.clock.advance(milliseconds: 1)
        let again = try await f.deliveries.claim(limit: 10)
        #expect(again.map(\.delivery.index) == [0] && again.first?.delivery.retries == 1)
        try await f.deliveries.settle([settlement(again[0], .failed, status: 500, requests: 2, retried: true)])
        let deliveries = try await f.allDeliveries(id)
        #expect(deliveries[0].state == .failed && deliveries[0].attempts == 3 && deliveries[0].retries == 2)
        #expect(deliveries[0].notBefore == at)
        #expect(deliveries[1].state == .unknown && deliveries[1].reason == "timeout" && deliveries[1].attempts == 1)
        let counts = try #require(try await f.deliveries.notification(id: id)).counts
        #expect(counts[.failed] == 1 && counts[.unknown] == 1 && counts.total == 2)
    }

    @Test func aSettlementOfADeliveryNotSendingIsIgnored() async throws {
        let (f, id, claimed) = try await claimedTwo(); defer { f.close() }
        try await f.deliveries.settle([settlement(claimed[0], .delivered, status: 200)])
        let before = try await f.allDeliveries(id)
        try await f.deliveries.settle([settlement(claimed[0], .failed, status: 410),
                                       settlement(claimed[1], .delivered, status: 200),
                                       settlement(claimed[1], .failed, status: 410)])
        let after = try await f.allDeliveries(id)
        #expect(after[0] == before[0])
        #expect(after[1].state == .delivered && after[1].attempts == 1)
        #expect(try await f.deliveries.notification(id: id)?.counts[.delivered] == 2)
        var stranger = settlement(claimed[0], .delivered)
        stranger.notificationId = UUID().uuidString.lowercased()
        var malformed = stranger
        malformed.notificationId = "nope"
        try await f.deliveries.settle([stranger, malformed])
        try await f.deliveries.settle([])
        #expect(try await f.allDeliveries(id) == after)
    }
}
