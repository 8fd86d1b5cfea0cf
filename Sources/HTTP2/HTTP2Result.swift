/// How one request ended, in the kinds a sender needs to stay
/// at-most-once: the server answered; the request was certainly not written,
/// or written and refused before processing (safe to send again); or it may
/// have been written (never sent again).
public enum HTTP2Result: Sendable, Equatable {
    case answered(HTTP2Response)
    /// Never written: no connection, a failed TLS handshake, a connect
    /// timeout, the client stopping. The text says which, for logs.
    case notSent(String)
    /// Written, and refused before the server processed it (RFC 9113
    /// §8.7): `RST_STREAM` `REFUSED_STREAM`, or a stream above a `GOAWAY`'s
    /// last stream id. Safe to send again at once, on another connection
    /// (the refusing one is closed); see `TransferOutcome` for how libcurl
    /// tells it apart.
    case refused(String)
    /// Possibly written and unanswered: a timeout, a reset stream, a
    /// connection lost mid-request, the client stopped with it in flight.
    case uncertain(String)
}

/// The server's answer to one request.
public struct HTTP2Response: Sendable, Equatable {
    public var status: Int
    /// The response headers the request asked to keep, by lowercase name.
    public var headers: [String: String]
    /// The body, cut at `HTTP2Client.maxResponseBody` bytes.
    public var body: [UInt8]
    /// From the request's stream being started to the answer's end, in seconds.
    public var latency: Double
    /// The `authorization` value the request carried (`""` without one):
    /// a provider whose credential was refused renews that one, not a newer.
    public var authorization: String

    public init(status: Int, headers: [String: String], body: [UInt8], latency: Double, authorization: String) {
        self.status = status
        self.headers = headers
        self.body = body
        self.latency = latency
        self.authorization = authorization
    }
}
