/// A stored notification: what was asked, and how far its deliveries got.
public struct NotificationRecord: Sendable, Hashable {
    /// A random UUID, lowercase (also the storage key).
    public var id: String
    public var createdAt: Timestamp
    public var appId: String
    public var pushType: PushType
    /// The APNs payload as sent (`nil`: the request gave none).
    public var payload: [UInt8]?
    /// The FCM message members as sent, without a target (`nil`: none given).
    public var fcm: [UInt8]?
    public var priority: Int
    public var expiration: Timestamp
    public var collapseId: String?
    public var idempotencyKey: String?
    public var digest: [UInt8]
    public var counts: DeliveryCounts
    /// `DELETE` was called: no request for it starts any more (a retry
    /// becomes `cancelled`, a follow-up request within a claim is not sent).
    public var cancelled: Bool
    /// An activity target still being resolved, page by page after the
    /// accept (`nil` once every token has its delivery): the sender adds
    /// each page's deliveries (`DeliveryStore.expand`).
    public var expansion: NotificationExpansion?

    /// No delivery is waiting or in flight, and none is still to be made.
    public var isFinished: Bool { counts.isFinished && expansion == nil }

    public init(id: String, createdAt: Timestamp, request: NotificationRequest, counts: DeliveryCounts) {
        self.init(id: id, createdAt: createdAt, appId: request.appId, pushType: request.pushType, payload: request.payload,
                  fcm: request.fcm, priority: request.priority,
                  expiration: request.expiration ?? createdAt.adding(NotificationRequest.defaultLifetime),
                  collapseId: request.collapseId, idempotencyKey: request.idempotencyKey, digest: request.digest,
                  counts: counts)
    }

    package init(id: String, createdAt: Timestamp, appId: String, pushType: PushType, payload: [UInt8]?, fcm: [UInt8]?, priority: Int,
                 expiration: Timestamp, collapseId: String?, idempotencyKey: String?, digest: [UInt8], counts: DeliveryCounts,
                 cancelled: Bool = false, expansion: NotificationExpansion? = nil) {
        self.id = id
        self.createdAt = createdAt
        self.appId = appId
        self.pushType = pushType
        self.payload = payload
        self.fcm = fcm
        self.priority = priority
        self.expiration = expiration
        self.collapseId = collapseId
        self.idempotencyKey = idempotencyKey
        self.digest = digest
        self.counts = counts
        self.cancelled = cancelled
        self.expansion = expansion
    }
}

/// Where the resolution of an activity target stands: the activity, and
/// the cursor of its next page of tokens (the registry's own
/// `activityTokens` cursor).
public struct NotificationExpansion: Sendable, Hashable {
    public var activityId: String
    public var cursor: String

    public init(activityId: String, cursor: String) {
        self.activityId = activityId
        self.cursor = cursor
    }
}

extension NotificationRecord {
    /// Where the idempotency key is stored: scoped to the app, so two apps
    /// may use the same key. The separator (0x1F) is neither in an app id
    /// nor in a key (printable ASCII).
    package var scopedIdempotencyKey: String? { idempotencyKey.map { appId + "\u{1F}" + $0 } }
}

/// Which token of which record a delivery is for. The delivery keeps the
/// holder, not the token: the token is read again when the delivery is
/// sent, so a device that signed out (or whose token APNs retired) in the
/// meantime gets nothing, and no second copy of any token lies at rest.
public struct DeliveryTarget: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case push
        case pushToStart
        case activity
    }

    public var userId: String
    public var appId: String
    public var deviceId: String
    public var kind: Kind
    /// Set for `activity` only.
    public var activityId: String?

    public init(userId: String, appId: String, deviceId: String, kind: Kind, activityId: String?) {
        self.userId = userId
        self.appId = appId
        self.deviceId = deviceId
        self.kind = kind
        self.activityId = activityId
    }

    package var tokenKind: TokenKind {
        switch kind {
        case .push: .push
        case .pushToStart: .pushToStart
        case .activity: .activity
        }
    }
}

/// One delivery as the API shows it (never the token).
public struct DeliveryRecord: Sendable, Hashable {
    public var notificationId: String
    /// Its place in the notification (the order targets were resolved in).
    public var index: UInt32
    public var target: DeliveryTarget
    public var tokenFingerprint: String
    public var platform: Platform
    /// The environment that answered last (at first: the token's).
    public var environment: APNsEnvironment
    public var state: DeliveryState
    /// APNs deliveries: chosen when the delivery is created, the same on
    /// every request for it (`apns-id`); `""` for other platforms.
    public var apnsId: String
    /// The provider's id of the delivered message (APNs' `apns-id`, FCM's
    /// `name`); `nil` until one is known.
    public var messageId: String?
    /// APNs' `apns-unique-id` (the sandbox's delivery-log id) from its last
    /// answer; `nil` when it sent none.
    public var apnsUniqueId: String?
    /// The provider's last HTTP status, if any.
    public var status: Int?
    /// The provider's last reason, or the registry's (`token_removed`, `platform_not_configured`, ...).
    public var reason: String?
    /// Every request sent for it.
    public var attempts: Int
    /// Claims that ended in a retryable answer (at most 3 before `failed`).
    public var retries: Int
    public var updatedAt: Timestamp
    /// When a `queued` delivery may be sent (a retry waits for its backoff).
    public var notBefore: Timestamp
    /// When a `sending` delivery was claimed.
    public var claimedAt: Timestamp?

    public init(notificationId: String, index: UInt32, target: DeliveryTarget, tokenFingerprint: String, platform: Platform,
                environment: APNsEnvironment, state: DeliveryState, apnsId: String, messageId: String? = nil,
                apnsUniqueId: String? = nil, status: Int?,
                reason: String?, attempts: Int, retries: Int, updatedAt: Timestamp, notBefore: Timestamp, claimedAt: Timestamp?) {
        self.notificationId = notificationId
        self.index = index
        self.target = target
        self.tokenFingerprint = tokenFingerprint
        self.platform = platform
        self.environment = environment
        self.state = state
        self.apnsId = apnsId
        self.messageId = messageId
        self.apnsUniqueId = apnsUniqueId
        self.status = status
        self.reason = reason
        self.attempts = attempts
        self.retries = retries
        self.updatedAt = updatedAt
        self.notBefore = notBefore
        self.claimedAt = claimedAt
    }
}

/// A delivery claimed for sending (`sending`), with what the sender needs:
/// the holder's token as it is now, and the notification it belongs to.
public struct ClaimedDelivery: Sendable {
    public var delivery: DeliveryRecord
    public var token: String
    public var notification: NotificationRecord

    public init(delivery: DeliveryRecord, token: String, notification: NotificationRecord) {
        self.delivery = delivery
        self.token = token
        self.notification = notification
    }
}

/// What the sender decided for a claimed delivery.
public struct DeliverySettlement: Sendable, Hashable {
    public var notificationId: String
    public var index: UInt32
    /// A final state, or `queued` again (a retry at `notBefore`).
    public var state: DeliveryState
    public var status: Int?
    public var reason: String?
    public var environment: APNsEnvironment
    /// Requests sent during this claim.
    public var requests: Int
    /// Whether this claim ended in a retryable answer.
    public var retried: Bool
    public var notBefore: Timestamp?
    /// The fingerprint of the token this claim sent to.
    public var tokenFingerprint: String
    /// The provider's id of the delivered message, when it gave one.
    public var messageId: String?
    /// APNs' `apns-unique-id`, when its answer carried one.
    public var apnsUniqueId: String?

    public init(notificationId: String, index: UInt32, state: DeliveryState, status: Int?, reason: String?,
                environment: APNsEnvironment, requests: Int, retried: Bool, notBefore: Timestamp?, tokenFingerprint: String,
                messageId: String? = nil, apnsUniqueId: String? = nil) {
        self.notificationId = notificationId
        self.index = index
        self.state = state
        self.status = status
        self.reason = reason
        self.environment = environment
        self.requests = requests
        self.retried = retried
        self.notBefore = notBefore
        self.tokenFingerprint = tokenFingerprint
        self.messageId = messageId
        self.apnsUniqueId = apnsUniqueId
    }
}

/// The queue's shape at one moment (metrics).
public struct DeliveryQueueStats: Sendable, Hashable {
    public var queued: Int
    public var sending: Int
    /// When the oldest `queued` delivery was due; nil when none is queued.
    public var oldestDue: Timestamp?

    public init(queued: Int, sending: Int, oldestDue: Timestamp?) {
        self.queued = queued
        self.sending = sending
        self.oldestDue = oldestDue
    }
}
