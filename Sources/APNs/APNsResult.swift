/// How one request ended, in the kinds the delivery rules need to stay
/// at-most-once: APNs answered; the request was certainly not written, or
/// refused before APNs processed it (safe to send again); or it may have
/// been written (never sent again).
public enum APNsResult: Sendable, Equatable {
    case answered(APNsAnswer)
    /// Never written: no connection, a failed TLS handshake, a connect
    /// timeout, the client stopping. The text says which, for logs.
    case notSent(String)
    /// Written, and refused before processing (RFC 9113 §8.7): `RST_STREAM`
    /// `REFUSED_STREAM`, or a stream above a `GOAWAY`'s last stream id.
    /// Sent again at once (`APNsAttempt`).
    case refused(String)
    /// Possibly written and unanswered: a timeout, a reset stream, a
    /// connection lost mid-request, the client stopped with it in flight.
    case uncertain(String)
}

/// APNs's HTTP answer to one request.
public struct APNsAnswer: Sendable, Equatable {
    public var status: Int
    /// The `apns-id` response header: the request's own, echoed.
    public var apnsId: String?
    /// The `reason` of an error body (`BadDeviceToken`, `Unregistered`, …).
    public var reason: String?
    /// With 410: when APNs last knew the token valid, in epoch milliseconds.
    public var timestamp: Int64?
    /// The `retry-after` header, in seconds.
    public var retryAfter: Int?
    /// From the request's stream being started to the answer's end, in seconds.
    public var latency: Double
    /// The provider token the request carried: after `ExpiredProviderToken`,
    /// pass it to `ProviderTokens.expired`.
    public var providerToken: String
    /// The `apns-unique-id` response header: the id of this answer in
    /// Apple's delivery log, sent by the development (sandbox) environment.
    public var uniqueId: String?

    public init(status: Int, apnsId: String?, reason: String?, timestamp: Int64?, retryAfter: Int?, latency: Double,
                providerToken: String, uniqueId: String? = nil) {
        self.status = status
        self.apnsId = apnsId
        self.reason = reason
        self.timestamp = timestamp
        self.retryAfter = retryAfter
        self.latency = latency
        self.providerToken = providerToken
        self.uniqueId = uniqueId
    }
}
