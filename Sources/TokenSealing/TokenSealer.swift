import Crypto
import Glibc

/// Seals tokens for storage (AES-256-GCM) and derives the keys of the
/// indexes that find a record by its token (HMAC-SHA-256), under one
/// `TokenKeyRing`.
///
/// A sealed value is
///
///     version (1 byte, 2) | key id (1) | nonce (12) | ciphertext (token's length) | tag (16)
///
/// with associated data `version | key id | context`: the header cannot be
/// changed without the tag failing, and `context` (the caller's name for the
/// slot, e.g. "push" or "pushToStart") binds a value to the kind of token
/// it holds, so a sealed push token copied into a push-to-start slot does
/// not open there. The context is not stored; the caller supplies the same
/// one to `open`.
///
/// **Versions.** Version 1 has the same layout; the version byte tells which
/// binding the caller's context carried when the value was sealed (the
/// registry's version 1 contexts named the token's kind only, version 2
/// names its record too), so a caller that changes what its context binds
/// can tell old values apart and open them only where it migrates them
/// (`open(_:context:format:)` with `format: 1`).
///
/// **Nonces** are 12 random bytes from the kernel (`getentropy`: the
/// ChaCha20 generator behind /dev/urandom; about 380 ns for 12 bytes here,
/// where OpenSSL 3.0's `RAND_bytes` took 920 ns). Random 96-bit nonces are safe
/// for about 2^32 values per key (NIST SP 800-38D §8.3: beyond that the
/// chance of a repeated nonce, which would leak the XOR of two tokens and the
/// key's GHASH subkey, passes 2^-32). Every upsert that changes a token
/// seals once, and a re-seal during rotation counts too; a registry should
/// rotate (`TokenKeyRing.addingRandomKey()` and re-seal) long before a key
/// has sealed a few hundred million values — in practice, on a schedule.
///
/// **Why the indexes use HMAC, not the ciphertext:** sealing is randomised,
/// so the same token seals to a different value every time and a sealed
/// value cannot be looked up. A keyed hash is deterministic (one token, one
/// index key) yet, without the index key, reveals nothing: an unkeyed
/// SHA-256 would let anyone holding a candidate token (from a sender's logs,
/// another leak) confirm that a backup holds it, and find whose record it
/// is. Index keys are never reversed, so the index key need not, and does
/// not, rotate with the sealing keys (see `TokenKeyRing`).
///
/// **What a backup without the key file discloses:** no token. It does show
/// how many tokens there are, each token's length (GCM does not pad; APNs
/// tokens are all 32 bytes anyway), which key id sealed each value, and,
/// through equal index keys, which records hold the same token; and
/// whatever else the store keeps in plaintext (user and device ids, times).
///
/// Cheap to copy and safe to share between threads: it holds the ring and
/// the keys prepared from it once (immutable OpenSSL templates), and each
/// call works on its own copy of one.
public struct TokenSealer: Sendable {
    /// The format byte at the front of every sealed value.
    public static let formatVersion: UInt8 = 2
    /// The oldest version `keyID(of:)` still recognises.
    public static let oldestFormatVersion: UInt8 = 1
    public static let nonceLength = AESGCM.nonceLength
    public static let tagLength = AESGCM.tagLength
    static let headerLength = 2
    /// Bytes a sealed value has beyond its token: header, nonce and tag (30).
    public static let overhead = headerLength + nonceLength + tagLength
    /// The length of an index key (an HMAC-SHA-256 tag).
    public static let indexKeyLength = HMACSHA256.tagLength

    public let ring: TokenKeyRing
    private let prepared: PreparedKeys

    /// The ring's keys prepared for OpenSSL: AES key schedules and the HMAC
    /// key's hash states, computed once here rather than on every call.
    private final class PreparedKeys: Sendable {
        let sealing: [(id: UInt8, key: AESGCM.Key)]
        let current: AESGCM.Key
        let index: HMACSHA256.Key

        init(_ ring: TokenKeyRing) {
            sealing = ring.sealingKeys.map { ($0.id, AESGCM.Key($0.bytes)) }
            current = sealing[sealing.count - 1].key  // the ring keeps the current key last
            index = HMACSHA256.Key(ring.indexKey)
        }

        func sealingKey(id: UInt8) -> AESGCM.Key? {
            for entry in sealing where entry.id == id { return entry.key }
            return nil
        }
    }

    /// Prepares every key of `ring` (a few microseconds a key): build one
    /// sealer per ring and share it, rather than one per call.
    public init(ring: TokenKeyRing) {
        self.ring = ring
        self.prepared = PreparedKeys(ring)
    }

    /// `token` sealed under the ring's current key, bound to `context`.
    /// Never fails: OpenSSL fails only when it cannot allocate, and
    /// getentropy only without a kernel random source; both stop the process
    /// (a token must not be stored unsealed, nor under a predictable nonce).
    public func seal(_ token: [UInt8], context: [UInt8] = []) -> [UInt8] {
        var nonce: (UInt32, UInt32, UInt32) = (0, 0, 0)  // 12 bytes, on the stack
        let drawn = withUnsafeMutableBytes(of: &nonce) { getentropy($0.baseAddress, $0.count) }
        precondition(drawn == 0, "getentropy failed: no random nonce")
        return withUnsafeBytes(of: nonce) { seal(token, context: context, nonce: $0) }
    }

    /// `seal` with a given nonce (and format): for known-answer tests and
    /// tests of migrations from format 1 only (a nonce must never repeat
    /// under one key).
    func seal(_ token: [UInt8], context: [UInt8], nonce: UnsafeRawBufferPointer,
              format: UInt8 = formatVersion) -> [UInt8] {
        precondition(nonce.count == Self.nonceLength)
        let keyID = ring.currentKeyID
        let key = prepared.current
        let length = Self.overhead + token.count
        return [UInt8](unsafeUninitializedCapacity: length) { output, initialized in
            let output = UnsafeMutableRawBufferPointer(output)
            output[0] = format
            output[1] = keyID
            let nonceRange = Self.headerLength..<(Self.headerLength + Self.nonceLength)
            UnsafeMutableRawBufferPointer(rebasing: output[nonceRange]).copyMemory(from: nonce)
            let sealed = token.withUnsafeBytes { token in
                context.withUnsafeBytes { context in
                    key.seal(nonce: UnsafeRawBufferPointer(rebasing: output[nonceRange]),
                             associatedData: UnsafeRawBufferPointer(rebasing: output[..<Self.headerLength]),
                             moreAssociatedData: context, plaintext: token,
                             ciphertext: UnsafeMutableRawBufferPointer(
                                 rebasing: output[nonceRange.upperBound..<(length - Self.tagLength)]),
                             tag: UnsafeMutableRawBufferPointer(rebasing: output[(length - Self.tagLength)...]))
                }
            }
            precondition(sealed, "AES-256-GCM failed inside OpenSSL")
            initialized = length
        }
    }

    /// The token `sealed` holds, when it was sealed under a key of the ring
    /// with the same `context` and not changed since, in format `format`
    /// (the current one unless a migration asks for an older one). Throws
    /// `truncated` or `unsupportedVersion` for bytes that are not a sealed
    /// value of that format,
    /// `unknownKey` for a key id the ring does not hold, and
    /// `authenticationFailed` for anything else (a changed byte, another
    /// context, a value from another ring); never returns unauthenticated bytes.
    public func open(_ sealed: [UInt8], context: [UInt8] = [],
                     format: UInt8 = formatVersion) throws(TokenSealError) -> [UInt8] {
        try sealed.withUnsafeBytes { sealed in
            Result { () throws(TokenSealError) in try open(sealed, context: context, format: format) }
        }.get()
    }

    /// `open` over bytes in place (e.g. a value still in the database's map).
    public func open(_ sealed: UnsafeRawBufferPointer, context: [UInt8] = [],
                     format: UInt8 = formatVersion) throws(TokenSealError) -> [UInt8] {
        let (key, length) = try opening(sealed, format: format)
        // An empty token skips Array(unsafeUninitializedCapacity: 0), which
        // writes the count into the shared empty-array singleton (a race
        // ThreadSanitizer reports when threads do it at once).
        guard length > 0 else {
            guard open(sealed, context: context, key, into: UnsafeMutableRawBufferPointer(start: nil, count: 0)) else {
                throw .authenticationFailed
            }
            return []
        }
        var opened = false
        let token = [UInt8](unsafeUninitializedCapacity: length) { output, initialized in
            opened = open(sealed, context: context, key, into: UnsafeMutableRawBufferPointer(output))
            // Key.open zeroes the buffer when it refuses, so it is initialised either way.
            initialized = length
        }
        guard opened else { throw .authenticationFailed }
        return token
    }

    /// `open`, decrypted straight into a string's storage (the stores read
    /// tokens as strings: this spares an array and a second copy per token).
    /// What was sealed was a string's UTF-8, and GCM authenticates it, so
    /// the string's own UTF-8 check never finds anything to repair.
    public func openString(_ sealed: UnsafeRawBufferPointer, context: [UInt8] = [],
                           format: UInt8 = formatVersion) throws(TokenSealError) -> String {
        let (key, length) = try opening(sealed, format: format)
        var opened = false
        let text = String(unsafeUninitializedCapacity: length) { output in
            opened = open(sealed, context: context, key, into: UnsafeMutableRawBufferPointer(output))
            return opened ? length : 0
        }
        guard opened else { throw .authenticationFailed }
        return text
    }

    /// The key that sealed `sealed` and its plaintext length, or why it cannot be opened.
    private func opening(_ sealed: UnsafeRawBufferPointer, format: UInt8) throws(TokenSealError) -> (AESGCM.Key, Int) {
        guard sealed.count >= Self.overhead else { throw .truncated(length: sealed.count) }
        guard sealed[0] == format else { throw .unsupportedVersion(sealed[0]) }
        guard let key = prepared.sealingKey(id: sealed[1]) else { throw .unknownKey(sealed[1]) }
        return (key, sealed.count - Self.overhead)
    }

    /// Decrypts `sealed` (checked by `opening`) into `output` (its plaintext
    /// length); false when it does not authenticate, with `output` zeroed.
    private func open(_ sealed: UnsafeRawBufferPointer, context: [UInt8], _ key: AESGCM.Key,
                      into output: UnsafeMutableRawBufferPointer) -> Bool {
        let ciphertextStart = Self.headerLength + Self.nonceLength
        let ciphertextEnd = sealed.count - Self.tagLength
        return context.withUnsafeBytes { context in
            key.open(nonce: UnsafeRawBufferPointer(rebasing: sealed[Self.headerLength..<ciphertextStart]),
                     associatedData: UnsafeRawBufferPointer(rebasing: sealed[..<Self.headerLength]),
                     moreAssociatedData: context,
                     ciphertext: UnsafeRawBufferPointer(rebasing: sealed[ciphertextStart..<ciphertextEnd]),
                     tag: UnsafeRawBufferPointer(rebasing: sealed[ciphertextEnd...]),
                     plaintext: output)
        }
    }

    public func keyID(of sealed: [UInt8]) -> UInt8? {
        sealed.withUnsafeBytes { keyID(of: $0) }
    }

    /// `keyID(of:)` over bytes in place.
    public func keyID(of sealed: UnsafeRawBufferPointer) -> UInt8? {
        guard sealed.count >= Self.overhead, (Self.oldestFormatVersion...Self.formatVersion).contains(sealed[0]) else {
            return nil
        }
        return sealed[1]
    }

    /// The format version of `sealed` (its first byte), or nil when it is
    /// not a sealed value of a format this build knows. Unauthenticated.
    public func format(of sealed: [UInt8]) -> UInt8? {
        keyID(of: sealed) == nil ? nil : sealed[0]
    }

    /// The key under which an index finds `token`:
    /// HMAC-SHA-256(index key, length of context (2 bytes, big-endian) | context | token), 32 bytes.
    /// Deterministic, one per (token, context), the same under every
    /// sealing key. The context's length goes first so that ("push", "Xy")
    /// and ("pushX", "y") are different inputs.
    public func indexKey(for token: [UInt8], context: [UInt8] = []) -> [UInt8] {
        precondition(context.count <= Int(UInt16.max), "an index context is at most 65535 bytes")
        let length = UInt16(context.count).bigEndian
        return withUnsafeBytes(of: length) { length in
            context.withUnsafeBytes { context in
                token.withUnsafeBytes { token in prepared.index.tag(length, context, token) }
            }
        }
    }
}

/// Why `TokenSealer.open` refused a value.
public enum TokenSealError: Error, Equatable, CustomStringConvertible {
    /// Shorter than the 30 bytes of header, nonce and tag: not a sealed value.
    case truncated(length: Int)
    /// The first byte names no format this version reads.
    case unsupportedVersion(UInt8)
    /// Sealed under a key id the ring does not hold (retired, or from another ring).
    case unknownKey(UInt8)
    /// The tag does not authenticate the value with this key and context:
    /// a changed byte, another context, or another key under the same id.
    case authenticationFailed

    public var description: String {
        switch self {
        case let .truncated(length): "sealed token is \(length) bytes, shorter than the \(TokenSealer.overhead) every sealed value has"
        case let .unsupportedVersion(version): "sealed token has format version \(version), not the one expected (this build seals version \(TokenSealer.formatVersion))"
        case let .unknownKey(id): "sealed token names key \(id), which the key ring does not hold"
        case .authenticationFailed: "sealed token does not authenticate (changed, another context, or another key)"
        }
    }
}
