import JSON

/// The body of one `messages:send`: `{"message": {…the caller's fcm
/// members…, "token": T}}`. The caller's members go byte for byte as
/// accepted; the registry adds the token and, when `android.ttl` is absent,
/// `android.ttl` (the seconds left until the notification's expiration as
/// FCM's Duration string, at most FCM's 28 days), so FCM stops trying when
/// the registry would.
package enum FCMMessage {
    /// FCM's longest `ttl`: 28 days.
    package static let maxTTLSeconds: Int64 = 2_419_200

    /// `fcm` is the compact object the notification holds; `token` the
    /// device's registration token; `secondsLeft` until expiration.
    package static func body(fcm: [UInt8], token: String, secondsLeft: Int64) -> [UInt8] {
        var members = withTTL(fcm, secondsLeft: secondsLeft)
        var out: [UInt8] = Array(#"{"message":{"token":"#.utf8)
        out += JSONWriter.encode(.string(token))
        // The caller's members after the token: `{}` adds none, `{"a":1}` adds `,"a":1`.
        members.removeFirst()
        if members.first != UInt8(ascii: "}") { out.append(UInt8(ascii: ",")) }
        out += members
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// `fcm` with `android.ttl` set when it is not there.
    package static func withTTL(_ fcm: [UInt8], secondsLeft: Int64) -> [UInt8] {
        let ttl = JSONWriter.encode(.string("\(min(max(0, secondsLeft), maxTTLSeconds))s"))
        guard let range = JSONMemberText.valueRange("android", in: fcm) else {
            // No android member: add one in front.
            let rest = fcm.dropFirst()
            return Array(#"{"android":{"ttl":"#.utf8) + ttl + [UInt8(ascii: "}")]
                + (rest.first == UInt8(ascii: "}") ? [] : [UInt8(ascii: ",")]) + rest
        }
        let android = Array(fcm[range])
        if JSONMemberText.valueRange("ttl", in: android) != nil { return fcm }
        // An android object without ttl (the accepted body checked it is an object): add ttl first in it.
        let inner = android.dropFirst()
        let patched = Array(#"{"ttl":"#.utf8) + ttl + (inner.first == UInt8(ascii: "}") ? [] : [UInt8(ascii: ",")]) + inner
        return Array(fcm[..<range.lowerBound]) + patched + Array(fcm[range.upperBound...])
    }
}
