import Foundation
import RegistryCore
import RegistryTestSupport
import Testing

/// `DeliveryStore.claim`: which deliveries a sender gets, with which token, and what the rest become.
struct DeliveryClaimTests {
    @Test func claimsDueDeliveriesWithTheHoldersTokenAndMarksThemSending() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.register("bob", "d1", token: 2)
        let id = try await f.notify(.users(["alice", "bob"])).record.id
        f.clock.advance(seconds: 1)
        let claimed = try await f.deliveries.claim(limit: 10)
        #expect(claimed.count == 2)
        #expect(Set(claimed.map(\.token)) == [apnsToken(1), apnsToken(2)])
        for claim in claimed {
            #expect(claim.delivery.state == .sending && claim.delivery.claimedAt == f.clock.now())
            #expect(claim.delivery.updatedAt == f.clock.now())
            #expect(claim.delivery.tokenFingerprint == HistoryEvent.fingerprint(of: claim.token))
            #expect(claim.notification.id == id && claim.notification.payload == Array(#"{"aps":{"alert":"hi"}}"#.utf8))
        }
        let notification = try #require(try await f.deliveries.notification(id: id))
        #expect(notification.counts[.sending] == 2 && notification.counts[.queued] == 0)
        #expect(try await f.allDeliveries(id) == claimed.map(\.delivery).sorted { $0.index < $1.index })
        #expect(try await f.deliveries.claim(limit: 10).isEmpty)
        #expect(try await f.deliveries.queueStats() == DeliveryQueueStats(queued: 0, sending: 2, oldestDue: nil))
    }

    @Test func claimsAtMostTheLimitOldestDueFirst() async throws {
        let f = try makeStore(); defer { f.close() }
        for user in ["a", "b", "c"] { try await f.store.register(user, "d", token: user.utf8.first.map(Int.init)) }
        let older = try await f.notify(.users(["a", "b"])).record.id
        f.clock.advance(seconds: 1)
        let newer = try await f.notify(.user("c")).record.id
        #expect(try await f.deliveries.claim(limit: 0).isEmpty)
        let first = try await f.deliveries.claim(limit: 2)
        #expect(first.map(\.delivery.notificationId) == [older, older])
        #expect(first.map(\.delivery.index) == [0, 1])
        #expect(try await f.deliveries.claim(limit: 2).map(\.delivery.notificationId) == [newer])
    }

    /// Urgent first: priority 10 before 5 before 1, oldest due first within
    /// one priority, a retry waiting for its backoff passed over.
    @Test func claimsByPriorityThenAge() async throws {
        let f = try makeStore(); defer { f.close() }
        for user in ["a", "b", "c", "d"] { try await f.store.register(user, "d", token: user.utf8.first.map(Int.init)) }
        let low = try await f.notify(.user("a"), priority: 1).record.id
        f.clock.advance(seconds: 1)
        let fanOut = try await f.notify(.user("b"), priority: 5).record.id
        f.clock.advance(seconds: 1)
        let alert = try await f.notify(.user("c"), priority: 10).record.id
        f.clock.advance(seconds: 1)
        let laterAlert = try await f.notify(.user("d"), priority: 10).record.id
        var order: [String] = []
        while let claimed = try await f.deliveries.claim(limit: 1).first { order.append(claimed.delivery.notificationId) }
        #expect(order == [alert, laterAlert, fanOut, low])
        #expect(try await f.deliveries.queueStats().queued == 0)
    }

    @Test func usesTheTokenTheHolderHasWhenClaimed() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        let id = try await f.notify(.user("alice")).record.id
        try await f.store.register("alice", "d1", token: 9)
        let claimed = try await f.deliveries.claim(limit: 10)
        #expect(claimed.map(\.token) == [apnsToken(9)])
        #expect(try await f.allDeliveries(id).map(\.tokenFingerprint) == [HistoryEvent.fingerprint(of: apnsToken(9))])
    }

    @Test func aHolderWithoutATokenFailsWithTokenRemoved() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.register("alice", "d2", token: 2)
        let id = try await f.notify(.user("alice")).record.id
        try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: nil)
        f.clock.advance(seconds: 1)
        let claimed = try await f.deliveries.claim(limit: 10)
        #expect(claimed.map(\.token) == [apnsToken(2)])
        let failed = try #require(try await f.allDeliveries(id).first { $0.target.deviceId == "d1" })
        #expect(failed.state == .failed && failed.reason == DeliveryReason.tokenRemoved)
        #expect(failed.updatedAt == f.clock.now() && failed.claimedAt == nil)
        let notification = try #require(try await f.deliveries.notification(id: id))
        #expect(notification.counts[.failed] == 1 && notification.counts[.sending] == 1 && notification.counts[.queued] == 0)
    }

    /// A delivery accepted for an APNs token is never handed to FCM: the
    /// device that re-registered with an FCM token since gets nothing.
    @Test func aTokenThatChangedPlatformFailsWithTokenChanged() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        let id = try await f.notify(.user("alice")).record.id
        _ = try await f.store.registerDevice(DeviceRegistration(userId: "alice", deviceId: "d1", pushToken: .set("fcm-alice-1"),
                                                                platform: .fcm))
        #expect(try await f.deliveries.claim(limit: 10).isEmpty)
        let delivery = try #require(try await f.allDeliveries(id).first)
        #expect(delivery.state == .failed && delivery.reason == DeliveryReason.tokenChanged)
        #expect(delivery.platform == .apns)
        let notification = try #require(try await f.deliveries.notification(id: id))
        #expect(notification.counts[.failed] == 1 && notification.counts[.queued] == 0)
    }

    @Test func aDeliveryPastItsExpirationExpiresInsteadOfBeingClaimed() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        let id = try await f.notify(.user("alice"), expiresIn: 60).record.id
        f.clock.advance(seconds: 60)
        let atExpiration = try await f.deliveries.claim(limit: 10)
        #expect(atExpiration.count == 1)
        _ = try await f.deliveries.settle([settlement(atExpiration[0], .queued, status: 503, retried: true,
                                                      notBefore: f.clock.now())])
        f.clock.advance(milliseconds: 1)
        #expect(try await f.deliveries.claim(limit: 10).isEmpty)
        let delivery = try #require(try await f.allDeliveries(id).first)
        #expect(delivery.state == .expired && delivery.updatedAt == f.clock.now())
        let notification = try #require(try await f.deliveries.notification(id: id))
        #expect(notification.counts[.expired] == 1 && notification.counts.isFinished)
    }

    @Test func neverClaimsADeliveryBeforeItIsDueNorOneNotQueued() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        let (notification, deliveries) = notificationRecords(holders: [("alice", "d1"), ("alice", "d1"), ("alice", "d1")],
                                                             now: f.clock.now())
        var later = deliveries
        later[0].notBefore = Timestamp(milliseconds: f.clock.now().milliseconds + 5_000)
        later[1].state = .failed
        later[1].reason = DeliveryReason.platformNotConfigured
        var counts = DeliveryCounts()
        for delivery in later { counts.move(from: nil, to: delivery.state) }
        var record = notification
        record.counts = counts
        _ = try await f.deliveries.enqueue(record, later)
        #expect(try await f.deliveries.claim(limit: 10).map(\.delivery.index) == [2])
        f.clock.advance(seconds: 5)
        #expect(try await f.deliveries.claim(limit: 10).map(\.delivery.index) == [0])
        #expect(try await f.deliveries.notification(id: notification.id)?.counts[.sending] == 2)
    }
}
