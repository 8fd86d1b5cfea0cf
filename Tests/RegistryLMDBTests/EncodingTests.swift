import Codecs
@testable import RegistryCore
@testable import RegistryLMDB
@testable import RegistryPostgres
import RegistryTestSupport
import Testing

/// Key and value encodings: unforgeable keys, exact round trips, and
/// defensive decoding (a bad value throws, never traps).
struct EncodingTests {
    @Test func keysOfDistinctIdentifierPairsNeverCollide() {
        // Every pair of ids over a tiny alphabet that includes NUL and a byte
        // that looks like a length prefix: all keys distinct, all decode back.
        let alphabet: [String] = ["", "\u{0}", "\u{1}", "a", "\u{0}\u{1}", "a\u{0}", "\u{0}\u{2}a", "aa"]
        var seen: [[UInt8]: (String, String)] = [:]
        for user in alphabet {
            for device in alphabet {
                let key = StoreKey.device(user, device)
                #expect(seen[key] == nil, "\(user.utf8.map { $0 }) / \(device.utf8.map { $0 }) collides")
                seen[key] = (user, device)
                #expect(StoreKey.decode(key) == [user, "0", device])
            }
        }
    }

    @Test func aUserPrefixCoversOnlyThatUsersKeys() {
        #expect(StoreKey.device("ab", "d").starts(with: StoreKey.user("ab")))
        #expect(!StoreKey.device("abc", "d").starts(with: StoreKey.user("ab")))
        #expect(!StoreKey.device("a", "bd").starts(with: StoreKey.user("ab")))
    }

    @Test func longestKeysStayUnderLMDBLimit() {
        let id = String(repeating: "x", count: Identifier.maxIdentifierBytes)
        let expiry = ExpiryKey(at: Timestamp(milliseconds: .max), kind: .activityToken,
                               recordKey: StoreKey.activityToken(id, id, id))
        #expect(expiry.bytes.count <= 511)
        #expect(StoreKey.tokenOwner(String(repeating: "F", count: 4096), .push).count == 33)
    }

    @Test func malformedKeysDoNotDecode() {
        #expect(StoreKey.decode([0]) == nil)
        #expect(StoreKey.decode([0, 5, 0x61]) == nil)
        #expect(StoreKey.decode([0, 1, 0xFF]) == nil)
    }

    @Test func deviceValueRoundTrips() throws {
        let full = DeviceValue(platform: .fcm, environment: .sandbox, osVersion: "18.2", appVersion: "2.1.0",
                               createdAt: Timestamp(milliseconds: 1), lastSeenAt: Timestamp(milliseconds: 1 << 40),
                               sequence: .max)
        let bare = DeviceValue(platform: .apns, environment: .production, osVersion: nil, appVersion: nil,
                               createdAt: Timestamp(milliseconds: 0), lastSeenAt: Timestamp(milliseconds: 5), sequence: nil)
        #expect(try DeviceValue(decoding: full.encoded()) == full)
        #expect(try DeviceValue(decoding: bare.encoded()) == bare)
    }

    @Test func tokenOwnerAndTombstoneValuesRoundTrip() throws {
        let token = TokenValue(token: String(repeating: "ab", count: 256), environment: .sandbox,
                               updatedAt: Timestamp(milliseconds: 123_456))
        let owner = TokenHolder(userId: "u\u{0}", deviceId: "d", activityId: "match-42")
        let tombstone = TombstoneValue(sequence: 1 << 63, deletedAt: Timestamp(milliseconds: 99))
        let key = StoreKey.device("u", "d")
        #expect(try TokenValue(decoding: token.encoded(key: key), key: key) == token)
        #expect(try TokenHolder(decoding: owner.encoded()) == owner)
        #expect(try TokenHolder(decoding: TokenHolder(userId: "u", deviceId: "d", activityId: nil).encoded()).activityId == nil)
        #expect(try TombstoneValue(decoding: tombstone.encoded()) == tombstone)
    }

    /// The lookup's scans decode keys and values where they lie in LMDB's
    /// map; what they read must be what the array decoders read.
    @Test func valuesAndKeysDecodeTheSameInPlace() throws {
        let device = DeviceValue(platform: .fcm, environment: .sandbox, osVersion: "18.2", appVersion: "gerät-2",
                                 createdAt: Timestamp(milliseconds: 1), lastSeenAt: Timestamp(milliseconds: 1 << 40),
                                 sequence: 7)
        let deviceBytes = device.encoded()
        #expect(try deviceBytes.withUnsafeBytes { try DeviceValue(decoding: $0) } == device)
        for length in 0..<deviceBytes.count {
            #expect(throws: StoredValueError.self) { try deviceBytes.prefix(length).withUnsafeBytes { try DeviceValue(decoding: $0) } }
        }
        let key = StoreKey.device("u\u{0}ser", "d")
        #expect(key.withUnsafeBytes { StoreKey.recordID($0) } == StoreKey.recordID(key))
        #expect([UInt8]([0, 5, 0x61]).withUnsafeBytes { StoreKey.recordID($0) } == nil)
        #expect([UInt8]([0, 1, 0xFF]).withUnsafeBytes { StoreKey.decode($0) } == nil)

        let token = TokenValue(token: "a1b2", environment: .sandbox, updatedAt: Timestamp(milliseconds: 99))
        let tokenBytes = try token.encoded(.pushToStart, key: key)
        let opened = try tokenBytes.withUnsafeBytes { bytes in
            try key.withUnsafeBytes { try TokenValue.opened(inPlace: bytes, in: TokenSlot(.pushToStart, key: $0), TestKeys.vault) }
        }
        #expect(opened == StoredToken(token: "a1b2", environment: .sandbox, updatedAt: Timestamp(milliseconds: 99)))
        // Bound to its slot in place as from an array: another kind or key does not open it.
        #expect(throws: StoredValueError.self) {
            try tokenBytes.withUnsafeBytes { try TokenValue.opened(inPlace: $0, in: TokenSlot(.push, key: key), TestKeys.vault) }
        }
        #expect(throws: StoredValueError.self) {
            try tokenBytes.withUnsafeBytes {
                try TokenValue.opened(inPlace: $0, in: TokenSlot(.pushToStart, key: StoreKey.device("u", "d")), TestKeys.vault)
            }
        }
    }

    /// `ByteOrder.compare` is LMDB's order (unsigned bytes, a prefix first).
    @Test func byteOrderMatchesLexicographicOrder() {
        let keys: [[UInt8]] = [[], [0], [0, 0], [0, 1], [1], [0x7F], [0x80], [0xFF], [0xFF, 0], [0xFF, 0xFF],
                               StoreKey.device("a", "b"), StoreKey.device("a", "bb"), StoreKey.device("ab", "")]
        for a in keys {
            for b in keys {
                let order = b.withUnsafeBytes { ByteOrder.compare(a, $0) }
                #expect((order < 0) == a.lexicographicallyPrecedes(b), "\(a) vs \(b)")
                #expect((order == 0) == (a == b), "\(a) vs \(b)")
            }
        }
    }

    @Test func everyTruncationOfAValueThrows() {
        let encoded = DeviceValue(platform: .apns, environment: .production, osVersion: "18", appVersion: "2",
                                  createdAt: Timestamp(milliseconds: 1_000_000), lastSeenAt: Timestamp(milliseconds: 2_000_000),
                                  sequence: 300).encoded()
        for length in 0..<encoded.count {
            #expect(throws: StoredValueError.self) { try DeviceValue(decoding: Array(encoded.prefix(length))) }
        }
    }

    @Test func unknownVersionTrailingBytesAndBadEnumsThrow() throws {
        let key = StoreKey.device("u", "d")
        var token = try TokenValue(token: "ab", environment: .production, updatedAt: Timestamp(milliseconds: 1)).encoded(key: key)
        #expect(throws: StoredValueError.self) { try TokenValue(decoding: [3] + token.dropFirst(), key: key) }
        #expect(throws: StoredValueError.self) { try TokenValue(decoding: token + [0], key: key) }
        token[1] = 9
        #expect(throws: StoredValueError.self) { try TokenValue(decoding: token, key: key) }
        #expect(throws: StoredValueError.self) { try TombstoneValue(decoding: [1] + [UInt8](repeating: 0xFF, count: 11)) }
        #expect(throws: StoredValueError.self) { try TokenHolder(decoding: [1, 2, 0xC3, 0x28, 1, 0x61, 0]) }
    }

    @Test func expiryKeysSortOldestFirstWithinAKind() throws {
        let old = ExpiryKey(at: Timestamp(milliseconds: 3_600_000), kind: .device, recordKey: StoreKey.device("z", "z"))
        let new = ExpiryKey(at: Timestamp(milliseconds: 256 * 3_600_000), kind: .device, recordKey: StoreKey.device("a", "a"))
        let other = ExpiryKey(at: Timestamp(milliseconds: 0), kind: .tombstone, recordKey: StoreKey.device("a", "a"))
        #expect(old.bytes.lexicographicallyPrecedes(new.bytes))
        #expect(new.bytes.lexicographicallyPrecedes(other.bytes))
        let parsed = try #require(ExpiryKey(bytes: new.bytes))
        #expect(parsed == new)
        #expect(ExpiryKey(at: Timestamp(milliseconds: 3_599_999), kind: .device, recordKey: []).bucket == 0)
    }

    @Test func cursorRejectsTamperingAnotherActivityAndAnotherSecret() throws {
        let secret = [UInt8](repeating: 7, count: 32)
        let cursor = ActivityCursor(after: .v1("user", "device"))
        let text = cursor.encode(activity: "match-1", secret: secret)
        #expect(ActivityCursor.decode(text, activity: "match-1", secret: secret)?.after == cursor.after)
        #expect(ActivityCursor.decode(text, activity: "match-2", secret: secret) == nil)
        #expect(ActivityCursor.decode(text, activity: "match-1", secret: [UInt8](repeating: 8, count: 32)) == nil)
        var bytes = try #require(Base64URL.decode(text))
        bytes[3] ^= 1
        #expect(ActivityCursor.decode(Base64URL.encode(bytes), activity: "match-1", secret: secret) == nil)
    }

    /// The last base64url character of a cursor whose length is not a
    /// multiple of 3 bytes carries unused low bits; setting one spells the
    /// same bytes a second way, which strict decoding refuses (API: a 400).
    @Test func cursorWithStrayTrailingBitsIsRefused() throws {
        let secret = [UInt8](repeating: 7, count: 32)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var tampered = 0
        for device in ["d", "dd", "ddd"] {
            let text = ActivityCursor(after: .v1("user", device)).encode(activity: "match-1", secret: secret)
            #expect(ActivityCursor.decode(text, activity: "match-1", secret: secret) != nil)
            guard text.utf8.count % 4 != 0 else { continue }
            var characters = Array(text.utf8)
            let last = try #require(alphabet.firstIndex(of: characters[characters.count - 1]))
            characters[characters.count - 1] = alphabet[last + 1]
            #expect(ActivityCursor.decode(String(decoding: characters, as: UTF8.self), activity: "match-1", secret: secret) == nil)
            tampered += 1
        }
        #expect(tampered == 2)
    }
}

@Suite struct StoredTextTests {
    @Test func decodesASCIIAndUTF8AndRefusesWhatIsNotUTF8() {
        #expect(LengthPrefixed.text(ArraySlice("device-1".utf8)) == "device-1")
        #expect(LengthPrefixed.text(ArraySlice("gerät-€-\u{1F600}".utf8)) == "gerät-€-\u{1F600}")
        #expect(LengthPrefixed.text([]) == "")
        for bad: [UInt8] in [[0xFF], [0x61, 0xC3], [0xED, 0xA0, 0x80], [0xC0, 0xAF], [0x61, 0x80, 0x62]] {
            #expect(LengthPrefixed.text(ArraySlice(bad)) == nil, "\(bad)")
        }
        let inside: [UInt8] = [0x00] + Array("ab".utf8) + [0xFF]
        #expect(LengthPrefixed.text(inside[1..<3]) == "ab")
    }
}
