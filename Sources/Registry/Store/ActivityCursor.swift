import Crypto
import Codecs

/// The fan-out's opaque cursor: the last (user, app, device) key part a page
/// returned, bound to its activity and signed with the store's secret
/// (HMAC-SHA-256, truncated to 16 bytes), then base64url. Decoding is
/// strict (`Codecs.Base64URL`), so a cursor has one spelling: one altered
/// only in its unused trailing bits is refused like any other forgery.
///
/// Because it names a key rather than an offset, it stays valid while
/// tokens change: the walk resumes after that key, so a token present for
/// the whole walk appears exactly once.
struct ActivityCursor {
    static let version: UInt8 = 1
    static let macLength = 16

    /// The activityTokens key suffix (user, app code, device parts) to resume after.
    var after: [UInt8]

    func encode(activity: String, secret: [UInt8]) -> String {
        let payload = [Self.version] + after
        return Base64URL.encode(payload + Self.mac(payload, activity: activity, secret: secret))
    }

    static func decode(_ text: String, activity: String, secret: [UInt8]) -> ActivityCursor? {
        guard let bytes = Base64URL.decode(text), bytes.count > 1 + macLength, bytes[0] == version else { return nil }
        let payload = Array(bytes.dropLast(macLength))
        let mac = Array(bytes.suffix(macLength))
        guard constantTimeEquals(mac, Self.mac(payload, activity: activity, secret: secret)),
              let parts = StoreKey.decode(payload.dropFirst()), parts.count == 3 else { return nil }
        return ActivityCursor(after: Array(payload.dropFirst()))
    }

    private static func mac(_ payload: [UInt8], activity: String, secret: [UInt8]) -> [UInt8] {
        Array(HMACSHA256.tag(message: StoreKey.parts(activity) + payload, key: secret).prefix(macLength))
    }
}
