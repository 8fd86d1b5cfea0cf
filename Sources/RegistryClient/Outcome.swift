import Foundation

/// What one request's answer means for the queue.
enum Outcome: Sendable, Equatable {
    /// The server now holds what was sent.
    case applied
    /// Worth sending again after a pause: a network error, a 5xx, 408 or
    /// 429. `retryAfter` is the server's `Retry-After`, a floor for the pause.
    case transient(retryAfter: Duration?)
    /// 401: the credential was not accepted. For the signed-in session it is
    /// retried like a transient failure, since the credential provider is
    /// asked again on the next attempt and may have refreshed an expired
    /// token; for a retired session it ends the delete.
    case unauthenticated
    /// The credential provider threw, so nothing was sent. Retried like a
    /// transient failure for the signed-in session (the provider may recover);
    /// final for a retired one.
    case credentialUnavailable
    /// `409 stale_write`: the server holds a write with a higher sequence.
    case stale
    /// Any other 4xx, or a 3xx: sending the same state again would fail the
    /// same way. `URLSessionTransport` never follows a redirect, so one is
    /// a misconfigured base URL or a server pointing elsewhere, and retrying
    /// with backoff would only be redirected again.
    case rejected(status: Int, reason: String?)

    init(_ response: RegistryResponse, now: Date) {
        switch response.status {
        case 200..<300: self = .applied
        case 409: self = .stale
        case 401: self = .unauthenticated
        case 408, 429, 500...:
            self = .transient(retryAfter: response.headers["retry-after"].flatMap { Self.retryAfter($0, now: now) })
        default: self = .rejected(status: response.status, reason: Self.errorCode(response.body))
        }
    }

    /// The `error.code` of the server's error body, if it has one.
    static func errorCode(_ body: Data) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
              let error = object["error"] as? [String: Any] else { return nil }
        return error["code"] as? String
    }

    /// `Retry-After` as delta-seconds or an HTTP-date (RFC 9110 §10.2.3);
    /// nil when unreadable, so a garbled header falls back to plain backoff.
    static func retryAfter(_ value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if let seconds = UInt64(text) { return .seconds(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: text) else { return nil }
        return .milliseconds(max(0, Int64(date.timeIntervalSince(now) * 1000)))
    }
}
