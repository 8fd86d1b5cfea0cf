import TokenSealing

/// Tokens at rest (docs/api.md "Tokens sealed at rest"): every token a
/// store writes is sealed here first, and every index that finds a record by
/// its token is keyed by `ownerKey`, an HMAC under a separate key. It sits
/// above the storage engine (it knows tokens and kinds, not LMDB), so every
/// store backend seals the same way.
///
/// A sealed value is bound to its slot (`TokenSlot`: its kind and its
/// record): it opens nowhere else. Values sealed before that binding
/// (`TokenSealer` format 1, bound to their kind only) are opened only by the
/// migration that seals them again (`openUnbound`).
public struct TokenVault: Sendable {
    public let sealer: TokenSealer
    /// Set when this vault must not seal (`SealingKeys.forWriting`: the
    /// registry announced a key this process could not load): `seal` throws it.
    package private(set) var sealingRefusal: RegistryError?

    public init(ring: TokenKeyRing) {
        sealer = TokenSealer(ring: ring)
    }

    /// This vault, opening as before but refusing to seal with `error`.
    package func refusingToSeal(_ error: RegistryError) -> TokenVault {
        var vault = self
        vault.sealingRefusal = error
        return vault
    }

    public var ring: TokenKeyRing { sealer.ring }

    /// The index context of each kind (its raw value as one byte), made
    /// once: the read path computes owner keys often.
    private static let contexts: [[UInt8]] = (0...3).map { [UInt8($0)] }

    package func seal(_ token: String, in slot: TokenSlot) throws(RegistryError) -> [UInt8] {
        if let sealingRefusal { throw sealingRefusal }
        return sealer.seal(Array(token.utf8), context: slot.bytes)
    }

    // The sealed bytes are a concrete type, not a generic collection: the
    // stores call these from their own modules on every read, where a
    // generic would run unspecialized.
    package func open(_ sealed: ArraySlice<UInt8>, in slot: TokenSlot) throws -> String {
        try open(sealed, context: slot.bytes, format: TokenSealer.formatVersion)
    }

    package func open(_ sealed: [UInt8], in slot: TokenSlot) throws -> String {
        try open(sealed[...], in: slot)
    }

    /// `open` of bytes in place (a value still in the database's map).
    package func open(_ sealed: UnsafeRawBufferPointer, in slot: TokenSlot) throws -> String {
        try open(sealed, context: slot.bytes, format: TokenSealer.formatVersion)
    }

    /// A value sealed before values were bound to their record (format 1,
    /// its kind as the context): only the migration that seals it again
    /// opens one.
    package func openUnbound(_ sealed: ArraySlice<UInt8>, _ kind: TokenKind) throws -> String {
        try open(sealed, context: Self.contexts[Int(kind.rawValue)], format: 1)
    }

    private func open(_ sealed: ArraySlice<UInt8>, context: [UInt8], format: UInt8) throws -> String {
        // Straight from the stored value's bytes into the string, without copying them.
        try sealed.withUnsafeBytes { bytes in try open(bytes, context: context, format: format) }
    }

    private func open(_ sealed: UnsafeRawBufferPointer, context: [UInt8], format: UInt8) throws -> String {
        do {
            return try sealer.openString(sealed, context: context, format: format)
        } catch {
            if case .unknownKey(let id) = error { throw UnknownSealingKey(keyID: id) }
            throw StoredValueError(what: "token", reason: "cannot be opened: \(error)")
        }
    }

    /// Whether `sealed` is a value sealed before values were bound to their
    /// record (the migration seals those again).
    package func isUnbound(_ sealed: ArraySlice<UInt8>) -> Bool {
        sealer.format(of: Array(sealed)) == 1
    }

    /// The key of `token`'s entry in `tokenOwners`: HMAC-SHA-256 of the token
    /// under the index key (kind as context), then the kind byte.
    package func ownerKey(_ token: String, _ kind: TokenKind) -> [UInt8] {
        sealer.indexKey(for: Array(token.utf8), context: Self.contexts[Int(kind.rawValue)]) + [kind.rawValue]
    }

    /// The sealing key id a stored value was sealed under (rotation).
    package func keyID(of sealed: ArraySlice<UInt8>) -> UInt8? {
        sealed.withUnsafeBytes { sealer.keyID(of: $0) }
    }

    /// A check value sealed under the current key: `meta` keeps one per
    /// sealing key, so a key file with another key under the same id is
    /// recognised at open (a stored token that fails could be damage).
    package func keyCheck() -> [UInt8] { sealer.seal(Self.checkText, context: [0]) }

    /// A check value of either format (one recorded before values were
    /// bound to their record is format 1).
    package func opensKeyCheck(_ sealed: [UInt8]) -> Bool {
        guard let format = sealer.format(of: sealed) else { return false }
        return (try? sealer.open(sealed, context: [0], format: format)) == Self.checkText
    }

    private static let checkText = Array("registryd sealing key check".utf8)

    /// A value the store keeps in `meta` to recognise its index key at open:
    /// a registry opened with another key file fails loudly instead of
    /// finding no token (every owner entry would be keyed differently).
    package var indexKeyCheck: [UInt8] {
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
    package var unavailable: RegistryError { .unavailable(reason: description) }
}
