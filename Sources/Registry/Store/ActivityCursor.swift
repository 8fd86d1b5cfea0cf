/// The fan-out's opaque cursor: the last (user, device) key part a page
/// returned, bound to its activity and signed with the store's secret
/// (HMAC-SHA-256, truncated to 16 bytes), then base64url.
///
/// Because it names a key rather than an offset, it stays valid while
/// tokens change: the walk resumes after that key, so a token present for
/// the whole walk appears exactly once.
struct ActivityCursor {
    static let version: UInt8 = 1
    static let macLength = 16

    /// The activityTokens key suffix (user, device parts) to resume after.
    var after: [UInt8]

    func encode(activity: String, secret: [UInt8]) -> String {
        let payload = [Self.version] + after
        return Base64URL.encode(payload + Self.mac(payload, activity: activity, secret: secret))
    }

    static func decode(_ text: String, activity: String, secret: [UInt8]) -> ActivityCursor? {
        guard let bytes = Base64URL.decode(text), bytes.count > 1 + macLength, bytes[0] == version else { return nil }
        let payload = Array(bytes.dropLast(macLength))
        let mac = Array(bytes.suffix(macLength))
        let expected = Self.mac(payload, activity: activity, secret: secret)
        var difference: UInt8 = 0
        for (a, b) in zip(mac, expected) { difference |= a ^ b }
        guard difference == 0, let parts = StoreKey.decode(payload.dropFirst()), parts.count == 2 else { return nil }
        return ActivityCursor(after: Array(payload.dropFirst()))
    }

    private static func mac(_ payload: [UInt8], activity: String, secret: [UInt8]) -> [UInt8] {
        Array(SHA256.hmac(key: secret, message: StoreKey.parts(activity) + payload).prefix(macLength))
    }
}

/// RFC 4648 §5 base64url without padding.
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            let chunk = bytes[i..<min(i + 3, bytes.count)]
            let n = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << UInt32(16 - 8 * $1.offset) }
            for j in 0..<(chunk.count + 1) { out.append(alphabet[Int(n >> UInt32(18 - 6 * j) & 0x3F)]) }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        for c in text.utf8 {
            guard let v = alphabet.firstIndex(of: c) else { return nil }
            values.append(UInt8(v))
        }
        guard values.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < values.count {
            let chunk = values[i..<min(i + 4, values.count)]
            let n = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << UInt32(18 - 6 * $1.offset) }
            for j in 0..<(chunk.count - 1) { out.append(UInt8(truncatingIfNeeded: n >> UInt32(16 - 8 * j))) }
            i += 4
        }
        return out
    }
}
