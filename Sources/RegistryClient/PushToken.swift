import Foundation

/// Which push service issued a token; the server's `platform` field.
public enum PushPlatform: String, Sendable, Hashable {
    case apns
    case fcm
}

/// The APNs host a token belongs to; the server's `environment` field.
///
/// A token sent to the wrong host fails silently (APNs answers
/// `BadDeviceToken` to the sender, never to the app), so the app must report
/// the environment its build really uses: see `detect(isSimulator:bundleURL:)`.
public enum APNsEnvironment: String, Sendable, Hashable {
    case production
    case sandbox
}

/// A token as the server stores it: text plus the host it routes through.
///
/// APNs hands the app raw bytes; `init(apns:environment:)` turns them into
/// the lowercase hex the server expects, so two callbacks with the same bytes
/// compare equal and cost no request.
public struct PushToken: Sendable, Hashable {
    public var value: String
    public var platform: PushPlatform
    public var environment: APNsEnvironment

    public init(value: String, platform: PushPlatform = .apns, environment: APNsEnvironment = .production) {
        self.value = platform == .apns ? value.lowercased() : value
        self.platform = platform
        self.environment = environment
    }

    /// An APNs token from `didRegisterForRemoteNotificationsWithDeviceToken`
    /// or an ActivityKit token sequence.
    public init(apns bytes: Data, environment: APNsEnvironment) {
        self.init(value: bytes.map { String(format: "%02x", $0) }.joined(), platform: .apns, environment: environment)
    }
}

/// What the device record's push token should be.
///
/// `unknown` differs from `withdrawn`: at launch the APNs callback has not
/// arrived yet, and telling the server `pushToken: null` then would drop a
/// working token for the few milliseconds until it does. `unknown` leaves the
/// server's token as it is; `withdrawn` removes it.
enum PushTokenFact: Sendable, Hashable {
    case unknown
    case withdrawn
    case token(PushToken)
}

/// The OS notification authorization, as `UNNotificationSettings`
/// reports it (`authorizationStatus`), without importing UserNotifications.
///
/// Only `denied` withdraws the push token from the server: a token under
/// `notDetermined` still carries background pushes, and `provisional` and
/// `ephemeral` deliver quietly.
public enum PushAuthorization: String, Sendable, Hashable {
    case notDetermined
    case denied
    case authorized
    case provisional
    case ephemeral
}
