import Codecs
import Crypto

/// The fan-out's opaque cursor: the last record (user, app, device) a page
/// visited, bound to its activity and signed with the store's secret
/// (HMAC-SHA-256, truncated to 16 bytes), then base64url. Decoding is
/// strict (`Codecs.Base64URL`), so a cursor has one spelling: one altered
/// only in its unused trailing bits is refused like any other forgery.
///
/// Because it names a record rather than an offset, it stays valid while
/// tokens change: the walk resumes after that record, so a token present
/// for the whole walk appears exactly once. The app is as the engine names
/// it (a short code in the LMDB store), which the cursor carries opaquely.
package struct ActivityCursor {
    static let version: UInt8 = 1
    static let macLength = 16

    /// The record to resume after.
    package var after: RecordID

    package init(after: RecordID) { self.after = after }

    package func encode(activity: String, secret: [UInt8]) -> String {
        let payload = [Self.version] + after.identity
        return Base64URL.encode(payload + Self.mac(payload, activity: activity, secret: secret))
    }

    package static func decode(_ text: String, activity: String, secret: [UInt8]) -> ActivityCursor? {
        guard let bytes = Base64URL.decode(text), bytes.count > 1 + macLength, bytes[0] == version else { return nil }
        let payload = Array(bytes.dropLast(macLength))
        let mac = Array(bytes.suffix(macLength))
        guard constantTimeEquals(mac, Self.mac(payload, activity: activity, secret: secret)),
              let parts = LengthPrefixed.decode(payload.dropFirst()), parts.count == 3 else { return nil }
        return ActivityCursor(after: RecordID(user: parts[0], app: parts[1], device: parts[2]))
    }

    private static func mac(_ payload: [UInt8], activity: String, secret: [UInt8]) -> [UInt8] {
        Array(HMACSHA256.tag(message: LengthPrefixed.encode([activity]) + payload, key: secret).prefix(macLength))
    }
}
