/// What one request to APNs came to, in the terms the delivery rules need
/// (the sender translates its HTTP/2 client's results into these).
public enum PushAnswer: Sendable, Hashable {
    /// APNs answered: its status, its `reason`, its `timestamp` (410), and
    /// its `Retry-After`.
    case answered(status: Int, reason: String?, timestamp: Timestamp?, retryAfter: Duration?)
    /// The request was certainly not written (no connection, refused
    /// stream): it may be sent again.
    case notSent(String)
    /// A timeout, or a connection lost after the request was written: APNs
    /// may have it. Never sent again.
    case uncertain(String)
}

/// What a delivered or failed answer changes in the registry, applied as the
/// routes would (`POST /internal/v1/feedback`, `POST /internal/v1/tokens/environment`).
public enum DeliveryEffect: Sendable, Hashable {
    /// Removes the token (feedback), with the timestamp guard when APNs gave a time.
    case removeToken(FeedbackReason, registeredBefore: Timestamp?)
    /// The token works on the other environment: record that.
    case correctEnvironment(APNsEnvironment)
}
