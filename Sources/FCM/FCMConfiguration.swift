import HTTP2

/// How the FCM provider reaches Google: the HTTP v1 API's origin, the token
/// endpoint (when not each file's `token_uri`), an extra CA and the
/// request timeout.
public struct FCMConfiguration: Sendable {
    public static let fcmDefault = "https://fcm.googleapis.com"

    /// `https://host[:port]` of `messages:send`.
    public var fcmURL: String
    /// Overrides every service account's `token_uri` (`https://` only).
    public var tokenURL: String?
    /// The connections: the extra CA, the request timeout (a request
    /// unanswered by then has an uncertain outcome, never resent), the
    /// connect timeout, streams in flight, the client thread's niceness.
    public var http: HTTP2ClientConfiguration

    public init(fcmURL: String = Self.fcmDefault, tokenURL: String? = nil, caFile: String? = nil,
                requestTimeout: Duration = .seconds(10)) {
        self.fcmURL = fcmURL
        self.tokenURL = tokenURL
        http = HTTP2ClientConfiguration(name: "fcm", caFile: caFile, requestTimeout: requestTimeout)
    }
}
