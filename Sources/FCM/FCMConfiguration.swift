/// How the FCM provider reaches Google: the HTTP v1 API's origin, the token
/// endpoint (when not each file's `token_uri`), an extra CA and the
/// request timeout.
public struct FCMConfiguration: Sendable {
    public static let fcmDefault = "https://fcm.googleapis.com"

    /// `https://host[:port]` of `messages:send`.
    public var fcmURL: String
    /// Overrides every service account's `token_uri` (`https://` only).
    public var tokenURL: String?
    /// A CA certificate file (PEM) trusted besides the system's roots.
    public var caFile: String?
    /// A request unanswered by then has an uncertain outcome (never resent).
    public var requestTimeout: Duration
    public var connectTimeout: Duration = .seconds(5)
    /// HTTP/2 connections per host, and streams in flight on each.
    public var connectionsPerHost = 1
    public var maxStreamsPerConnection = 1000
    /// The nice value of the client's thread (see `HTTP2ClientConfiguration`).
    public var threadNiceness: Int32 = 0

    public init(fcmURL: String = Self.fcmDefault, tokenURL: String? = nil, caFile: String? = nil,
                requestTimeout: Duration = .seconds(10)) {
        self.fcmURL = fcmURL
        self.tokenURL = tokenURL
        self.caFile = caFile
        self.requestTimeout = requestTimeout
    }
}
