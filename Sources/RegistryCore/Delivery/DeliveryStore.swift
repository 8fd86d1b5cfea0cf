/// The delivery queue a store keeps beside the registry (docs/delivery.md):
/// notifications and their deliveries, durable like every other write (a
/// call that returns has committed).
///
/// Each engine keeps it in its own storage (LMDB: databases of the same
/// environment; PostgreSQL: tables, claimed with `FOR UPDATE SKIP LOCKED` so
/// many nodes share one queue and each delivery is sent by one). The rules
/// that decide states live in the sender (`DeliveryRules`); the store only
/// moves deliveries between states and keeps each notification's counts in
/// step, in the same transaction.
public protocol DeliveryStore: Sendable {
    /// Stores a new notification with its deliveries (their `notificationId`
    /// is the notification's). When its idempotency key was used within 24
    /// hours: the same digest answers `.existing` with the first notification
    /// and stores nothing; another digest throws `DeliveryError.idempotencyKeyReused`.
    func enqueue(_ notification: NotificationRecord, _ deliveries: [DeliveryRecord]) async throws -> EnqueueOutcome

    /// `nil` when there is no such notification (or it was swept).
    func notification(id: String) async throws -> NotificationRecord?

    /// Deliveries of a notification in index order, from `index` on.
    func deliveries(notificationId: String, from index: UInt32, limit: Int) async throws -> [DeliveryRecord]

    /// Up to `limit` notifications, newest first (by `createdAt`, then id),
    /// those after `position` when given (the last one of the page before).
    /// What an operator scans for "did that notification go out?".
    func recentNotifications(after position: NotificationPosition?, limit: Int) async throws -> [NotificationRecord]

    /// Cancels the notification: every `queued` delivery becomes
    /// `cancelled`, and so does any later retry of one in flight now
    /// (`settle`, `claim`); an activity still being resolved gets no more
    /// deliveries. `nil` when there is no such notification.
    func cancel(notificationId: String) async throws -> NotificationRecord?

    /// Up to `limit` notifications whose activity is still being resolved
    /// (`expansion` set), oldest first.
    func pendingExpansions(limit: Int) async throws -> [NotificationRecord]

    /// Adds the next page of an activity's deliveries to notification
    /// `notificationId`, in one transaction, when its expansion still
    /// stands at `cursor` (another node, or a cancel, may have moved it:
    /// then nothing is written and this returns `false`). The deliveries
    /// are numbered after those the notification holds, whatever their
    /// `index` says; `next` is the cursor after this page (`nil`: the
    /// activity is resolved).
    func expand(_ notificationId: String, from cursor: String, adding deliveries: [DeliveryRecord], next: String?) async throws -> Bool

    /// Claims up to `limit` due `queued` deliveries (by priority, 10 before 5 before 1, then oldest due first): each
    /// becomes `sending` with the holder's token as it is now. On the way,
    /// a due delivery past its notification's expiration becomes `expired`,
    /// and one whose holder no longer has a token `failed` (`token_removed`).
    /// The batch holds those claimed (`sending`) and those the claim
    /// decided without sending (`failed`, `expired`, `cancelled`), so the
    /// sender can log and count them.
    func claimBatch(limit: Int) async throws -> ClaimBatch

    /// Applies the sender's decisions to claimed deliveries (one transaction).
    /// A settlement for a delivery that is no longer `sending` (a claim that
    /// was abandoned meanwhile) is ignored; a retry of a cancelled
    /// notification's delivery is `cancelled`.
    func settle(_ settlements: [DeliverySettlement]) async throws

    /// `sending` deliveries claimed before `cutoff` become `unknown` (their
    /// node died while sending). Returns how many.
    func abandonClaims(claimedBefore cutoff: Timestamp) async throws -> Int

    /// Deletes notifications created before `cutoff` whose deliveries are
    /// all final, with their deliveries. Returns how many notifications went.
    func sweepNotifications(createdBefore cutoff: Timestamp) async throws -> Int

    func queueStats() async throws -> DeliveryQueueStats

    /// Deliveries not yet final (`queued` and `sending`) across the whole
    /// queue (every node's): what `--max-queued-deliveries` bounds. Cheap
    /// enough to ask at every accept.
    func pendingDeliveries() async throws -> Int
}

public extension DeliveryStore {
    /// The deliveries a claim of up to `limit` made `sending`.
    func claim(limit: Int) async throws -> [ClaimedDelivery] { try await claimBatch(limit: limit).claimed }
}

/// What one claim did: the deliveries it hands to the sender, and those it
/// settled itself without a request (a holder without a token or with one
/// of another platform, an expired or cancelled notification).
public struct ClaimBatch: Sendable {
    public var claimed: [ClaimedDelivery]
    public var decided: [DeliveryRecord]

    public init(claimed: [ClaimedDelivery], decided: [DeliveryRecord]) {
        self.claimed = claimed
        self.decided = decided
    }
}

public enum EnqueueOutcome: Sendable {
    case accepted(NotificationRecord)
    /// The idempotency key's first notification, as it is now.
    case existing(NotificationRecord)
}

/// Why the delivery routes refused, beyond `RegistryError`.
public enum DeliveryError: Error, Hashable, Sendable {
    /// The idempotency key was used within 24 hours with another body.
    case idempotencyKeyReused
    /// No notification has this id (or it was swept).
    case notFound
    /// The queue holds `pending` deliveries not yet final, at or above
    /// `limit`: the notification is refused whole, nothing stored.
    case queueFull(pending: Int, limit: Int)
}

package extension DeliveryStore {
    /// How long an idempotency key answers with its first notification.
    static var idempotencyWindow: Duration { .seconds(24 * 3600) }
}
