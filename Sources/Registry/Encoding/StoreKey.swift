/// Builds every LMDB key of the store from length-prefixed parts (two
/// bytes of big-endian length, then the bytes), so an id containing any
/// byte, separator or NUL included, cannot forge another key, and the key of
/// a prefix (a user, an activity) is a byte prefix of its children's keys.
///
/// Limit: LMDB keys are at most 511 bytes. The longest key here, an expiry
/// entry of an activity token, is 9 + 3 × (2 + 128) = 399 bytes.
enum StoreKey {
    static func parts(_ parts: String...) -> [UInt8] { encode(parts) }

    static func encode(_ parts: [String]) -> [UInt8] {
        var key: [UInt8] = []
        for part in parts { append(Array(part.utf8), to: &key) }
        return key
    }

    static func append(_ part: [UInt8], to key: inout [UInt8]) {
        key.append(UInt8(truncatingIfNeeded: part.count >> 8))
        key.append(UInt8(truncatingIfNeeded: part.count))
        key.append(contentsOf: part)
    }

    /// Splits a key back into its parts; `nil` when it is not well formed.
    static func decode(_ key: some Collection<UInt8>) -> [String]? {
        let bytes = Array(key)
        var parts: [String] = []
        var i = 0
        while i < bytes.count {
            guard i + 2 <= bytes.count else { return nil }
            let length = Int(bytes[i]) << 8 | Int(bytes[i + 1])
            i += 2
            guard i + length <= bytes.count, let part = StoredText.decode(bytes[i..<i + length]) else {
                return nil
            }
            parts.append(part)
            i += length
        }
        return parts
    }

    /// `devices`, `pushTokens`, `pushToStart`, `tombstones`: (user, device).
    static func device(_ user: String, _ device: String) -> [UInt8] { parts(user, device) }

    /// The prefix of every (user, …) key.
    static func user(_ user: String) -> [UInt8] { parts(user) }

    /// `activityTokens`: (activity, user, device).
    static func activityToken(_ activity: String, _ user: String, _ device: String) -> [UInt8] {
        parts(activity, user, device)
    }

    /// `deviceActivities`: (user, device, activity).
    static func deviceActivity(_ user: String, _ device: String, _ activity: String) -> [UInt8] {
        parts(user, device, activity)
    }

    /// `tokenOwners`: SHA-256 of the token, then the kind.
    static func tokenOwner(_ token: String, _ kind: TokenKind) -> [UInt8] {
        SHA256.hash(Array(token.utf8)) + [kind.rawValue]
    }
}

/// Which database a token lives in.
enum TokenKind: UInt8, Sendable, CaseIterable {
    case push = 1
    case pushToStart = 2
    case activity = 3
}
