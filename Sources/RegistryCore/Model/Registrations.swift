/// What a registration says about a token field: JSON distinguishes an
/// omitted field (keep) from `null` (remove).
public enum TokenUpdate: Hashable, Sendable {
    case keep
    case remove
    case set(String)
}

/// `POST /v1/devices`: the launch upsert. `nil` fields were omitted and keep
/// their stored value (defaults apply only when the record is created).
public struct DeviceRegistration: Hashable, Sendable {
    public var userId: String
    /// `default` when the request names no app.
    public var appId: String
    public var deviceId: String
    public var pushToken: TokenUpdate
    public var platform: Platform?
    public var environment: APNsEnvironment?
    public var osVersion: String?
    public var appVersion: String?
    public var sequence: UInt64?

    public init(userId: String, deviceId: String, pushToken: TokenUpdate = .keep,
                platform: Platform? = nil, environment: APNsEnvironment? = nil,
                osVersion: String? = nil, appVersion: String? = nil, sequence: UInt64? = nil,
                appId: String = Identifier.defaultAppId) {
        self.userId = userId
        self.appId = appId
        self.deviceId = deviceId
        self.pushToken = pushToken
        self.platform = platform
        self.environment = environment
        self.osVersion = osVersion
        self.appVersion = appVersion
        self.sequence = sequence
    }
}

/// `POST /v1/devices/push-to-start-token`.
public struct PushToStartRegistration: Hashable, Sendable {
    public var userId: String
    /// `default` when the request names no app.
    public var appId: String
    public var deviceId: String
    public var token: String
    /// `nil`: `production`.
    public var environment: APNsEnvironment?
    public var sequence: UInt64?

    public init(userId: String, deviceId: String, token: String,
                environment: APNsEnvironment? = nil, sequence: UInt64? = nil,
                appId: String = Identifier.defaultAppId) {
        self.userId = userId
        self.appId = appId
        self.deviceId = deviceId
        self.token = token
        self.environment = environment
        self.sequence = sequence
    }
}

/// `POST /v1/activities/{activityId}/activity-token`.
public struct ActivityTokenRegistration: Hashable, Sendable {
    public var activityId: String
    public var userId: String
    /// `default` when the request names no app.
    public var appId: String
    public var deviceId: String
    public var token: String
    /// `nil`: `production`.
    public var environment: APNsEnvironment?
    public var sequence: UInt64?

    public init(activityId: String, userId: String, deviceId: String, token: String,
                environment: APNsEnvironment? = nil, sequence: UInt64? = nil,
                appId: String = Identifier.defaultAppId) {
        self.activityId = activityId
        self.userId = userId
        self.appId = appId
        self.deviceId = deviceId
        self.token = token
        self.environment = environment
        self.sequence = sequence
    }
}

/// The answer to a launch upsert.
public struct RegistrationOutcome: Hashable, Sendable {
    public var device: DeviceRecord
    /// `true` when the record did not exist before (HTTP 201), else 200.
    public var created: Bool

    public init(device: DeviceRecord, created: Bool) {
        self.device = device
        self.created = created
    }
}

/// Why a provider (or a sender's feedback) says a token is dead. Every one
/// removes the token; the reason is kept for history, logs and metrics.
public enum FeedbackReason: String, Sendable, Hashable, CaseIterable {
    case unregistered = "Unregistered"
    case badDeviceToken = "BadDeviceToken"
    case deviceTokenNotForTopic = "DeviceTokenNotForTopic"
    /// FCM: the registration token is not a valid FCM token (`INVALID_ARGUMENT` about `message.token`).
    case invalidToken = "InvalidToken"
    /// APNs: `410 ExpiredToken`, removed as `Unregistered` is. Last, since
    /// LMDB stores a reason as its position in this list.
    case expiredToken = "ExpiredToken"
}
