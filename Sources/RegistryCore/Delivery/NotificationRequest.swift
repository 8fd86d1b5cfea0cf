/// Whose tokens a notification goes to, resolved to tokens when it is
/// accepted (a token registered later is not added).
public enum NotificationTarget: Sendable, Hashable {
    /// The user's push tokens.
    case user(String)
    /// The push tokens of each of these users (at most 1,000).
    case users([String])
    /// The user's push-to-start tokens.
    case pushToStart(user: String)
    /// Every update token of the activity.
    case activity(String)
}

/// APNs' `apns-push-type` values the registry sends.
public enum PushType: String, Sendable, Hashable, CaseIterable {
    case alert
    case background
    case liveactivity
}

/// A validated `POST /internal/v1/notifications`.
public struct NotificationRequest: Sendable, Hashable {
    public var target: NotificationTarget
    public var appId: String
    public var pushType: PushType
    /// The APNs payload as the registry sends it (compact JSON, at most
    /// 4,096 bytes); `nil` when the request gave none.
    public var payload: [UInt8]?
    /// FCM's `Message` members as the registry sends them, without a
    /// target (compact JSON, at most 4,096 bytes); `nil` when none given.
    public var fcm: [UInt8]?
    /// 10, 5 or 1.
    public var priority: Int
    /// Past it, a delivery not yet sent becomes `expired`; `nil`: an hour
    /// after the notification is accepted (`NotificationRecord`, by the
    /// store's clock, as its `createdAt`).
    public var expiration: Timestamp?
    public var collapseId: String?
    public var idempotencyKey: String?
    /// SHA-256 of the request as received (its canonical form): a second
    /// request with the same idempotency key is the same request exactly
    /// when the digests match.
    public var digest: [UInt8]

    public init(target: NotificationTarget, appId: String, pushType: PushType, payload: [UInt8]?, fcm: [UInt8]? = nil,
                priority: Int, expiration: Timestamp?, collapseId: String?, idempotencyKey: String?, digest: [UInt8]) {
        self.target = target
        self.appId = appId
        self.pushType = pushType
        self.payload = payload
        self.fcm = fcm
        self.priority = priority
        self.expiration = expiration
        self.collapseId = collapseId
        self.idempotencyKey = idempotencyKey
        self.digest = digest
    }

    /// How long a notification given no expiration may wait to be sent.
    public static let defaultLifetime: Duration = .seconds(3600)
    /// APNs' payload limit, in bytes, as sent; the registry holds FCM's
    /// message members to the same.
    public static let maxPayloadBytes = 4096
    public static let maxCollapseIdBytes = 64
    public static let maxIdempotencyKeyBytes = 64
    public static let maxUserIds = 1000
}
