import RegistryCore
import Synchronization

/// The test store as the sender sees it, except that `settle` fails while
/// the outage is on: a PostgreSQL failover, as the settlement writer meets it.
final class SettleOutageStore: DeliveryStore {
    struct Refused: Error, CustomStringConvertible {
        var description: String { "the store is failing over" }
    }

    private let base: any DeliveryStore
    private let state = Mutex((outage: false, refused: 0))

    init(_ base: any DeliveryStore) { self.base = base }

    /// Starts or ends the outage.
    func outage(_ on: Bool) { state.withLock { $0.outage = on } }
    /// How many `settle` calls the outage refused.
    var refused: Int { state.withLock { $0.refused } }

    func settle(_ settlements: [DeliverySettlement]) async throws {
        let refuse = state.withLock { state in
            if state.outage { state.refused += 1 }
            return state.outage
        }
        if refuse { throw Refused() }
        try await base.settle(settlements)
    }

    func enqueue(_ notification: NotificationRecord, _ deliveries: [DeliveryRecord]) async throws -> EnqueueOutcome {
        try await base.enqueue(notification, deliveries)
    }
    func notification(id: String) async throws -> NotificationRecord? { try await base.notification(id: id) }
    func deliveries(notificationId: String, from index: UInt32, limit: Int) async throws -> [DeliveryRecord] {
        try await base.deliveries(notificationId: notificationId, from: index, limit: limit)
    }
    func recentNotifications(after position: NotificationPosition?, limit: Int) async throws -> [NotificationRecord] {
        try await base.recentNotifications(after: position, limit: limit)
    }
    func cancel(notificationId: String) async throws -> NotificationRecord? { try await base.cancel(notificationId: notificationId) }
    func pendingExpansions(limit: Int) async throws -> [NotificationRecord] { try await base.pendingExpansions(limit: limit) }
    func expand(_ notificationId: String, from cursor: String, adding deliveries: [DeliveryRecord], next: String?) async throws -> Bool {
        try await base.expand(notificationId, from: cursor, adding: deliveries, next: next)
    }
    func claimBatch(limit: Int) async throws -> ClaimBatch { try await base.claimBatch(limit: limit) }
    func abandonClaims(claimedBefore cutoff: Timestamp) async throws -> Int { try await base.abandonClaims(claimedBefore: cutoff) }
    func sweepNotifications(createdBefore cutoff: Timestamp) async throws -> Int {
        try await base.sweepNotifications(createdBefore: cutoff)
    }
    func queueStats() async throws -> DeliveryQueueStats { try await base.queueStats() }
    func pendingDeliveries() async throws -> Int { try await base.pendingDeliveries() }
}
