/// Where the server should end up for this install: seed 000's triple
/// (session, device, tokens), for this registry's API.
///
/// Every field is something observable: which session is signed in, which
/// tokens the OS issued, which Live Activities are running. None records an
/// intent such as "register now", which is why the app never chooses a
/// request: the queue compares this value with what the server holds and
/// works out the requests, so reporting the same fact twice costs nothing.
public struct DesiredState: Sendable {
    /// The signed-in session, or nil: then nothing is registered.
    public var session: Session?
    /// `identifierForVendor`: stable per install, and not restored by iCloud
    /// onto a second phone (a UUID kept in defaults or the keychain would be).
    public var deviceId: String
    /// The bundle identifier for an app family sharing one registry (API
    /// v1.1); nil sends none, so a v1 server is spoken to as v1.
    public var appId: String?
    public var osVersion: String?
    public var appVersion: String?
    /// The OS notification authorization, as last read; nil until the app
    /// reads it. Kept apart from the token: which of the two callbacks comes
    /// last must not decide what the server holds.
    public var authorization: PushAuthorization?
    /// The APNs (or FCM) device token as last issued; nil until one arrives.
    public var pushToken: PushToken?
    /// ActivityKit push-to-start tokens by attributes type (one
    /// `pushToStartTokenUpdates` sequence each), so two types never
    /// overwrite each other. The server holds one per device (API v1): the
    /// token of the first type by name is registered.
    public var pushToStartTokens: [String: PushToken]
    /// Running Live Activities that have an update token, by activity id.
    public var activities: [String: PushToken]

    public init(session: Session? = nil, deviceId: String, appId: String? = nil,
                osVersion: String? = nil, appVersion: String? = nil, authorization: PushAuthorization? = nil,
                pushToken: PushToken? = nil, pushToStartTokens: [String: PushToken] = [:],
                activities: [String: PushToken] = [:]) {
        self.session = session
        self.deviceId = deviceId
        self.appId = appId
        self.osVersion = osVersion
        self.appVersion = appVersion
        self.authorization = authorization
        self.pushToken = pushToken
        self.pushToStartTokens = pushToStartTokens
        self.activities = activities
    }

    /// What each server-side resource should hold; a resource absent here
    /// should not exist. Empty when signed out: the sign-out delete is the
    /// retired session's business, not this state's.
    var targets: [RegistryResource: Payload] {
        guard session != nil else { return [:] }
        var targets: [RegistryResource: Payload] = [
            .device: .device(DevicePayload(pushToken: pushTokenFact, osVersion: osVersion, appVersion: appVersion)),
        ]
        if let type = pushToStartTokens.keys.min(), let token = pushToStartTokens[type] { targets[.pushToStart] = .token(token) }
        for (activityId, token) in activities { targets[.activity(activityId)] = .token(token) }
        return targets
    }
}

extension DesiredState {
    /// What the server should hold as the push token, derived when the
    /// request is built: withdrawn while notifications are denied, whatever
    /// token arrived; the token once one is known otherwise; left alone
    /// before the first token (telling the server `null` at launch would drop
    /// a working token until the callback arrives).
    var pushTokenFact: PushTokenFact {
        if authorization == .denied { return .withdrawn }
        return pushToken.map(PushTokenFact.token) ?? .unknown
    }
}

/// One thing the server holds for (user, device): the device record, its
/// push-to-start token, or one activity's update token. The order is the
/// order the queue sends in: the device record first, so the launch upsert
/// carries the metadata before the tokens that would create a bare record.
public enum RegistryResource: Hashable, Comparable, Sendable {
    case device
    case pushToStart
    case activity(String)
}

/// The device record's part of the desired state.
struct DevicePayload: Hashable, Sendable {
    var pushToken: PushTokenFact
    var osVersion: String?
    var appVersion: String?
}

/// What one resource should hold.
enum Payload: Hashable, Sendable {
    case device(DevicePayload)
    case token(PushToken)
}
