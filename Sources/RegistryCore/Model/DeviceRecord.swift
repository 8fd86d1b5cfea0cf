/// A token together with when a registration last carried it.
public struct StoredToken: Hashable, Sendable {
    /// Normalised: APNs tokens lowercase hex, FCM tokens as sent.
    public var token: String
    public var environment: APNsEnvironment
    /// The last time a registration carried this token, changed or not.
    public var updatedAt: Timestamp

    public init(token: String, environment: APNsEnvironment, updatedAt: Timestamp) {
        self.token = token
        self.environment = environment
        self.updatedAt = updatedAt
    }
}

/// One device of one user, as the store holds it, with its tokens joined in.
///
/// The HTTP layer turns this into the device view (no tokens) or the sender
/// view (with tokens); the store never decides what a caller may see.
public struct DeviceRecord: Hashable, Sendable {
    public var userId: String
    /// The app of the family this record belongs to (`default` for v1 clients).
    public var appId: String
    public var deviceId: String
    public var platform: Platform
    /// The environment of `pushToken`.
    public var environment: APNsEnvironment
    public var osVersion: String?
    public var appVersion: String?
    public var pushToken: StoredToken?
    public var pushToStartToken: StoredToken?
    /// How many activity tokens this device holds.
    public var activityCount: Int
    public var createdAt: Timestamp
    public var lastSeenAt: Timestamp
    /// The highest `sequence` the client sent, `nil` when it never sent one.
    public var sequence: UInt64?

    public init(userId: String, deviceId: String, platform: Platform, environment: APNsEnvironment,
                osVersion: String?, appVersion: String?, pushToken: StoredToken?,
                pushToStartToken: StoredToken?, activityCount: Int, createdAt: Timestamp,
                lastSeenAt: Timestamp, sequence: UInt64?, appId: String = Identifier.defaultAppId) {
        self.userId = userId
        self.appId = appId
        self.deviceId = deviceId
        self.platform = platform
        self.environment = environment
        self.osVersion = osVersion
        self.appVersion = appVersion
        self.pushToken = pushToken
        self.pushToStartToken = pushToStartToken
        self.activityCount = activityCount
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.sequence = sequence
    }
}

/// One per-activity update token, as the fan-out returns it.
public struct ActivityToken: Hashable, Sendable {
    public var activityId: String
    public var userId: String
    public var appId: String
    public var deviceId: String
    public var token: String
    public var environment: APNsEnvironment
    /// When a registration last carried this token (what expiry and feedback compare).
    public var lastSeenAt: Timestamp

    public init(activityId: String, userId: String, deviceId: String, token: String,
                environment: APNsEnvironment, lastSeenAt: Timestamp, appId: String = Identifier.defaultAppId) {
        self.activityId = activityId
        self.userId = userId
        self.appId = appId
        self.deviceId = deviceId
        self.token = token
        self.environment = environment
        self.lastSeenAt = lastSeenAt
    }
}

/// One page of an activity's fan-out.
public struct ActivityTokenPage: Hashable, Sendable {
    public var tokens: [ActivityToken]
    /// Opaque and tamper-evident; `nil` exactly when no tokens remain.
    public var nextCursor: String?
    /// Stored tokens this page passed over because their sealed value does
    /// not open (damage): one bad value must not fail every holder's push.
    /// The HTTP layer logs and counts them; `check` names them.
    public var unreadable: Int

    public init(tokens: [ActivityToken], nextCursor: String?, unreadable: Int = 0) {
        self.tokens = tokens
        self.nextCursor = nextCursor
        self.unreadable = unreadable
    }
}
