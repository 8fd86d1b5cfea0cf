import TokenSealing

/// Tokens at rest (API.md v1.1 "Tokens sealed at rest"): every token a
/// store writes is sealed here first, and every index that finds a record by
/// its token is keyed by `ownerKey`, an HMAC under a separate key. It sits
/// above the storage engine (it knows tokens and kinds, not LMDB), so every
/// store backend seals the same way.
///
/// The token's kind is the sealing context: a sealed push token cannot be
/// moved into a push-to-start slot (or an activity's) and open there.
public struct TokenVault: Sendable {
    public let sealer: TokenSealer

    public init(ring: TokenKeyRing) {
        sealer = TokenSealer(ring: ring)
    }

    public var ring: TokenKeyRing { sealer.ring }

    /// The sealing and index context of each kind (its raw value as one
    /// byte), made once: the read path opens two tokens per device.
    private static let contexts: [[UInt8]] = (0...3).map { [UInt8($0)] }

    func seal(_ token: String, _ kind: TokenKind) -> [UInt8] {
        sealer.seal(Array(token.utf8), context: Self.contexts[Int(kind.rawValue)])
    }

    func open(_ sealed: some Collection<UInt8>, _ kind: TokenKind) throws -> String {
        let context = Self.contexts[Int(kind.rawValue)]
        do {
            // Straight from the stored value's bytes, without copying them.
            let opened = try sealed.withContiguousStorageIfAvailable { bytes in
                try sealer.open(UnsafeRawBufferPointer(bytes), context: context)
            } ?? sealer.open(Array(sealed), context: context)
            guard let text = String(validating: opened, as: UTF8.self) else {
                throw StoredValueError(what: "token", reason: "sealed bytes are not UTF-8")
            }
            return text
        } catch let error as TokenSealError {
            if case .unknownKey(let id) = error { throw UnknownSealingKey(keyID: id) }
            throw StoredValueError(what: "token", reason: "cannot be opened: \(error)")
        }
    }

    /// The key of `token`'s entry in `tokenOwners`: HMAC-SHA-256 of the token
    /// under the index key (kind as context), then the kind byte.
    func ownerKey(_ token: String, _ kind: TokenKind) -> [UInt8] {
        sealer.indexKey(for: Array(token.utf8), context: Self.contexts[Int(kind.rawValue)]) + [kind.rawValue]
    }

    /// The sealing key id a stored value was sealed under (rotation).
    func keyID(of sealed: some Collection<UInt8>) -> UInt8? {
        sealer.keyID(of: Array(sealed))
    }

    /// A check value sealed under the current key: `meta` keeps one per
    /// sealing key, so a key file with another key under the same id is
    /// recognised at open (a stored token that fails could be damage).
    func keyCheck() -> [UInt8] { sealer.seal(Self.checkText, context: [0]) }

    func opensKeyCheck(_ sealed: [UInt8]) -> Bool {
        (try? sealer.open(sealed, context: [0])) == Self.checkText
    }

    private static let checkText = Array("registryd sealing key check".utf8)

    /// A value the store keeps in `meta` to recognise its index key at open:
    /// a registry opened with another key file fails loudly instead of
    /// finding no token (every owner entry would be keyed differently).
    var indexKeyCheck: [UInt8] {
        sealer.indexKey(for: Array("registryd index key check".utf8), context: [0])
    }
}

/// A stored token sealed under a key the vault does not hold: another
/// process rotated the keys (reload the key file and retry), or the key
/// file lacks a key the registry still uses.
public struct UnknownSealingKey: Error, Hashable, Sendable, CustomStringConvertible {
    public let keyID: UInt8

    public var description: String { "a stored token is sealed under key \(keyID), which the token key file does not hold" }

    /// What a request meets when the key file cannot be reloaded to know the
    /// key: the storage is unavailable to it (503) until an operator gives
    /// this node the key file the registry uses.
    var unavailable: RegistryError { .unavailable(reason: description) }
}
