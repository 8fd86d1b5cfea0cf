import TokenSealing
@testable import RegistryCore
@testable import RegistryLMDB

/// Fuzz target `stored-values`: every decoder of bytes read back from LMDB
/// (the four value encodings, store keys, expiry keys) and the fan-out
/// cursor, which arrives from callers.
///
/// Properties: nothing traps (a bad value is a `StoredValueError`, a bad key
/// or cursor `nil`); a decoded value encodes to bytes that decode to the same
/// value; keys re-encode to exactly the input; a cursor is accepted only
/// with the MAC of this secret and activity.
enum StoredValuesFuzz {
    static let secret = Array("fuzz-cursor-secret".utf8)
    /// Fixed keys, so a finding replays: sealed values the fuzzer builds
    /// open only under these.
    static let vault = TokenVault(ring: try! TokenKeyRing(
        indexKey: [UInt8](repeating: 0x11, count: 32),
        sealingKeys: [try! .init(id: 1, bytes: [UInt8](repeating: 0x22, count: 32))], currentKeyID: 1))

    static func run(_ bytes: [UInt8]) -> [String] {
        var check = FuzzCheck()
        if let value = try? DeviceValue(decoding: bytes) {
            check.expect((try? DeviceValue(decoding: value.encoded())) == value, "device value does not round-trip: \(bytes)")
        }
        for kind in TokenKind.allCases {
            let slot = TokenSlot(kind, key: StoreKey.parts("user", "0", "device"))
            if let value = try? TokenValue(decoding: bytes, in: slot, vault) {
                check.expect((try? TokenValue(decoding: value.encoded(in: slot, vault), in: slot, vault)) == value,
                             "token value does not round-trip: \(bytes)")
            }
        }
        if let value = try? TokenValue(decodingPlaintext: bytes) {
            check.expect(!value.token.isEmpty || bytes.count >= 3, "a plaintext token value decoded from \(bytes.count) bytes")
        }
        if let value = try? HistoryValue(decoding: bytes) {
            check.expect((try? HistoryValue(decoding: value.encoded())) == value, "history value does not round-trip: \(bytes)")
        }
        if let value = try? TokenHolder(decoding: bytes) {
            check.expect((try? TokenHolder(decoding: value.encoded())) == value, "owner value does not round-trip: \(bytes)")
        }
        if let value = try? TombstoneValue(decoding: bytes) {
            check.expect((try? TombstoneValue(decoding: value.encoded())) == value, "tombstone does not round-trip: \(bytes)")
        }
        if let parts = StoreKey.decode(bytes) {
            check.expect(StoreKey.encode(parts) == bytes, "store key does not round-trip: \(bytes)")
        }
        if let key = ExpiryKey(bytes: bytes) {
            check.expect(key.bytes == bytes, "expiry key does not round-trip: \(bytes)")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        if let cursor = ActivityCursor.decode(text, activity: "match-1", secret: secret) {
            let again = ActivityCursor.decode(cursor.encode(activity: "match-1", secret: secret), activity: "match-1", secret: secret)
            check.expect(again?.after == cursor.after, "a cursor does not round-trip: \(text)")
            check.expect(ActivityCursor.decode(text, activity: "match-2", secret: secret) == nil,
                         "a cursor is accepted for another activity: \(text)")
        }
        return check.violations
    }
}
