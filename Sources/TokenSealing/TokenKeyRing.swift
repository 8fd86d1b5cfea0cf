import Glibc

/// The keys that protect tokens at rest: one or more AES-256-GCM sealing
/// keys, each with a one-byte id, of which the newest is `current` (it seals;
/// the older ones still open what they sealed), and one HMAC-SHA-256 index key.
///
/// **The index key never rotates with the sealing keys.** The store finds a
/// record by its token through an index entry keyed by
/// HMAC-SHA-256(indexKey, token), so the entry's key is a pure function of
/// the token and the index key: a new index key would make every existing
/// entry unfindable until each was recomputed from the plaintext, which is
/// the whole store's worth of work in one go, not the gradual re-sealing a
/// sealing key allows. Sealing-key rotation therefore adds and retires
/// sealing keys only; the index key is the same from the first start on.
/// (Replacing it would be a separate, offline migration.)
///
/// **Ids are never reused.** A new key takes the highest id plus one, and
/// the current key must be the highest id in the ring; since the current key
/// cannot be retired, the highest id never leaves the ring, so an id once
/// retired is never handed out again: a stray value sealed under a retired
/// key answers "unknown key", never a confusing authentication failure under
/// a new key that happens to share its id. Id 255 is the last one
/// (`keyIDsExhausted`): 254 rotations after a generated ring's key 1.
///
/// A value type: rotation builds a new ring (`addingRandomKey()`,
/// `retiring(_:)`) that the caller writes to the key file *before* sealing
/// anything with it, then hands to a new `TokenSealer`.
/// `description` never shows key material, so a ring may be logged.
public struct TokenKeyRing: Sendable, Equatable, CustomStringConvertible {
    /// Both key kinds are 32 bytes: AES-256 keys, and HMAC-SHA-256 keys as
    /// long as the hash (RFC 2104 §3: longer adds nothing).
    public static let keyLength = 32

    /// One AES-256-GCM sealing key and the id stored in front of every value it seals.
    public struct SealingKey: Sendable, Equatable, CustomStringConvertible {
        public let id: UInt8
        /// 32 bytes.
        public let bytes: [UInt8]

        public init(id: UInt8, bytes: [UInt8]) throws(TokenKeyRingError) {
            guard bytes.count == TokenKeyRing.keyLength else {
                throw .wrongKeyLength(key: "sealing key \(id)", length: bytes.count)
            }
            self.id = id
            self.bytes = bytes
        }

        public var description: String { "sealing key \(id)" }
    }

    /// The HMAC-SHA-256 key of the token indexes (32 bytes). Never rotated: see above.
    public let indexKey: [UInt8]
    /// Every sealing key, ascending by id.
    public let sealingKeys: [SealingKey]
    /// The id of the key that seals: always the highest id in the ring.
    public let currentKeyID: UInt8

    /// Checks the ring: a 32-byte index key, at least one sealing key, ids
    /// unique, `currentKeyID` present and the highest, and the index key
    /// different from every sealing key (one key for two purposes is a
    /// copy-paste mistake in a hand-made file).
    public init(indexKey: [UInt8], sealingKeys: [SealingKey], currentKeyID: UInt8) throws(TokenKeyRingError) {
        guard indexKey.count == Self.keyLength else { throw .wrongKeyLength(key: "index key", length: indexKey.count) }
        guard !sealingKeys.isEmpty else { throw .noSealingKey }
        let sorted = sealingKeys.sorted { $0.id < $1.id }
        for (previous, next) in zip(sorted, sorted.dropFirst()) where previous.id == next.id {
            throw .duplicateKeyID(next.id)
        }
        guard sorted.contains(where: { $0.id == currentKeyID }) else { throw .unknownKeyID(currentKeyID) }
        let newest = sorted[sorted.count - 1].id
        guard currentKeyID == newest else { throw .currentKeyNotNewest(current: currentKeyID, newest: newest) }
        if let shared = sorted.first(where: { $0.bytes == indexKey }) { throw .indexKeyIsASealingKey(shared.id) }
        self.indexKey = indexKey
        self.sealingKeys = sorted
        self.currentKeyID = currentKeyID
    }

    /// A new ring for a first start: a random index key and one random sealing key, id 1.
    public static func generate() throws(TokenKeyRingError) -> TokenKeyRing {
        try TokenKeyRing(indexKey: randomKey(), sealingKeys: [SealingKey(id: 1, bytes: randomKey())], currentKeyID: 1)
    }

    /// The key that seals.
    public var currentKey: SealingKey {
        // The initialiser guarantees it is present, and the highest.
        sealingKeys[sealingKeys.count - 1]
    }

    /// The sealing key with `id`, or nil when the ring does not hold it (never held it, or retired).
    public func sealingKey(id: UInt8) -> SealingKey? {
        sealingKeys.first { $0.id == id }
    }

    /// This ring plus `bytes` as a new sealing key with the next id, which
    /// becomes current. The older keys stay to open what they sealed.
    public func adding(newKey bytes: [UInt8]) throws(TokenKeyRingError) -> TokenKeyRing {
        guard currentKeyID < UInt8.max else { throw .keyIDsExhausted }
        let key = try SealingKey(id: currentKeyID + 1, bytes: bytes)
        return try TokenKeyRing(indexKey: indexKey, sealingKeys: sealingKeys + [key], currentKeyID: key.id)
    }

    /// This ring plus a fresh random sealing key (getentropy) with the next id, which becomes current.
    public func addingRandomKey() throws(TokenKeyRingError) -> TokenKeyRing {
        try adding(newKey: Self.randomKey())
    }

    /// This ring without sealing key `id`: values it sealed no longer open
    /// (`TokenSealError.unknownKey`). Refuses the current key, and an id the
    /// ring does not hold. Retire a key only once no stored value uses it
    /// (`TokenSealer.keyID(of:)` tells).
    public func retiring(_ id: UInt8) throws(TokenKeyRingError) -> TokenKeyRing {
        guard id != currentKeyID else { throw .retiringCurrentKey(id) }
        guard sealingKey(id: id) != nil else { throw .unknownKeyID(id) }
        return try TokenKeyRing(indexKey: indexKey, sealingKeys: sealingKeys.filter { $0.id != id },
                                currentKeyID: currentKeyID)
    }

    public var description: String {
        "TokenKeyRing(sealing keys \(sealingKeys.map { String($0.id) }.joined(separator: ", ")), current \(currentKeyID))"
    }

    /// 32 bytes from the kernel's random source (getentropy: the same source
    /// as /dev/urandom, and it blocks only until the pool is first seeded).
    static func randomKey() throws(TokenKeyRingError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: keyLength)
        guard getentropy(&bytes, bytes.count) == 0 else { throw .noEntropy(errno: errno) }
        return bytes
    }
}

/// Why a `TokenKeyRing` cannot be built or changed.
public enum TokenKeyRingError: Error, Equatable, CustomStringConvertible {
    /// A key is not 32 bytes.
    case wrongKeyLength(key: String, length: Int)
    /// A ring needs at least one sealing key.
    case noSealingKey
    /// Two sealing keys with one id.
    case duplicateKeyID(UInt8)
    /// The ring holds no sealing key with this id.
    case unknownKeyID(UInt8)
    /// The current key must be the highest id (so ids are never reused).
    case currentKeyNotNewest(current: UInt8, newest: UInt8)
    /// The current key cannot be retired: add a new one first.
    case retiringCurrentKey(UInt8)
    /// Id 255 is in use: no next id.
    case keyIDsExhausted
    /// The index key equals this sealing key.
    case indexKeyIsASealingKey(UInt8)
    /// getentropy failed (errno).
    case noEntropy(errno: Int32)

    public var description: String {
        switch self {
        case let .wrongKeyLength(key, length): "\(key) is \(length) bytes; it must be \(TokenKeyRing.keyLength)"
        case .noSealingKey: "no sealing key"
        case let .duplicateKeyID(id): "two sealing keys have id \(id)"
        case let .unknownKeyID(id): "no sealing key has id \(id)"
        case let .currentKeyNotNewest(current, newest):
            "the current sealing key (\(current)) is not the newest (\(newest)); ids are never reused"
        case let .retiringCurrentKey(id): "sealing key \(id) is current and cannot be retired; add a new key first"
        case .keyIDsExhausted: "sealing key id 255 is in use: no id is left for a new key"
        case let .indexKeyIsASealingKey(id): "the index key is the same as sealing key \(id)"
        case let .noEntropy(code): "no random bytes from getentropy: \(String(cString: strerror(code)))"
        }
    }
}
