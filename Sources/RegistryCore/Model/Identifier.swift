import Codecs

/// The identifier and token rules of docs/api.md, in one place, used by the HTTP
/// layer to validate input and by the store to normalise tokens.
public enum Identifier {
    /// The longest `userId`, `deviceId` or `activityId`, in UTF-8 bytes.
    public static let maxIdentifierBytes = 128
    /// Longest `osVersion` / `appVersion`, in UTF-8 bytes (not characters:
    /// one grapheme cluster can carry thousands of combining marks).
    public static let maxVersionBytes = 32

    /// Why a value was rejected, phrased to follow the field name.
    public enum Problem: Error, Hashable, Sendable {
        case empty, tooLong, controlCharacter, slash, notHex, oddLength, badLength, badCharacter

        public var message: String {
            switch self {
            case .empty: "must not be empty"
            case .tooLong: "is too long"
            case .controlCharacter: "must not contain control characters"
            case .slash: "must not contain '/'"
            case .notHex: "must be hexadecimal"
            case .oddLength: "must have an even number of hex digits"
            case .badLength: "has a length out of bounds"
            case .badCharacter: "contains a character that is not allowed"
            }
        }
    }

    /// A `userId`: 1–128 bytes of UTF-8, no control characters.
    public static func checkUserId(_ value: String) -> Problem? {
        checkIdentifier(value, allowSlash: true)
    }

    /// A `deviceId` or `activityId`: as `userId`, and no `/`.
    public static func checkDeviceId(_ value: String) -> Problem? {
        checkIdentifier(value, allowSlash: false)
    }

    public static func checkActivityId(_ value: String) -> Problem? {
        checkIdentifier(value, allowSlash: false)
    }

    private static func checkIdentifier(_ value: String, allowSlash: Bool) -> Problem? {
        let bytes = value.utf8
        if bytes.isEmpty { return .empty }
        if bytes.count > maxIdentifierBytes { return .tooLong }
        for byte in bytes {
            if byte < 0x20 || byte == 0x7F { return .controlCharacter }
            if byte == UInt8(ascii: "/") && !allowSlash { return .slash }
        }
        return nil
    }

    /// The longest `appId` (a bundle identifier, the APNs topic), in bytes.
    public static let maxAppIdBytes = 155
    /// The app of a request that names none (docs/api.md "App families").
    public static let defaultAppId = "default"

    /// An `appId`: 1–155 bytes of `[A-Za-z0-9.-]`.
    public static func checkAppId(_ value: String) -> Problem? {
        let bytes = value.utf8
        if bytes.isEmpty { return .empty }
        if bytes.count > maxAppIdBytes { return .tooLong }
        for byte in bytes where !(isAlphanumeric(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")) {
            return .badCharacter
        }
        return nil
    }

    /// `osVersion`, `appVersion`: at most 32 bytes of UTF-8, no control characters.
    public static func checkVersion(_ value: String) -> Problem? {
        if value.utf8.count > maxVersionBytes { return .tooLong }
        if value.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) { return .controlCharacter }
        return nil
    }

    /// An APNs token: hex, even length, 16–512 bytes decoded. Returns it lowercased.
    public static func normalizeAPNsToken(_ value: String) -> Result<String, Problem> {
        let bytes = Array(value.utf8)
        if bytes.isEmpty { return .failure(.empty) }
        for byte in bytes where Hex.digitValue(byte) == nil { return .failure(.notHex) }
        if bytes.count % 2 != 0 { return .failure(.oddLength) }
        if bytes.count < 32 || bytes.count > 1024 { return .failure(.badLength) }
        return .success(value.lowercased())
    }

    /// An FCM registration token: 1–4096 characters of `[A-Za-z0-9_:.-]`.
    public static func normalizeFCMToken(_ value: String) -> Result<String, Problem> {
        let bytes = Array(value.utf8)
        if bytes.isEmpty { return .failure(.empty) }
        if bytes.count > 4096 { return .failure(.badLength) }
        for byte in bytes where !(isAlphanumeric(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":")
                                  || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")) {
            return .failure(.badCharacter)
        }
        return .success(value)
    }

    /// A push token for `platform`.
    public static func normalizePushToken(_ value: String, platform: Platform) -> Result<String, Problem> {
        switch platform {
        case .apns: normalizeAPNsToken(value)
        case .fcm: normalizeFCMToken(value)
        }
    }

    private static func isAlphanumeric(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
    }
}
