import COpenSSL

/// AES-256-GCM (NIST SP 800-38D) through OpenSSL's EVP interface, with a
/// 96-bit nonce and a 128-bit tag: the primitive under `TokenSealer`.
///
/// The cipher is fetched from the default provider once (`EVP_CIPHER_fetch`)
/// and shared: a fetched `EVP_CIPHER` is immutable and reference counted, so
/// any number of threads may use it at once, whereas `EVP_aes_256_gcm()`
/// would look the implementation up again (under a lock) on every init.
/// Each call makes its own `EVP_CIPHER_CTX`, so calls share no mutable state.
///
/// A 96-bit nonce is the one size GCM uses directly as its counter block
/// (any other size is hashed first, and collides sooner). With random
/// nonces, NIST SP 800-38D §8.3 caps one key at 2^32 messages, which keeps the
/// chance that two of them share a nonce (which would reveal the XOR of the
/// two plaintexts and let the authentication key be recovered) below 2^-32.
enum AESGCM {
    static let keyLength = 32
    static let nonceLength = 12
    static let tagLength = 16

    /// The shared, fetched AES-256-GCM implementation.
    private final class Cipher: @unchecked Sendable {
        let pointer: OpaquePointer
        init() {
            guard let fetched = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil) else {
                ERR_clear_error()
                preconditionFailure("OpenSSL has no AES-256-GCM (default provider not loaded?)")
            }
            pointer = fetched
        }
    }
    private static let cipher = Cipher()

    /// Encrypts `plaintext` into `ciphertext` (the same length) and writes
    /// the 16-byte tag to `tag`, authenticating `associatedData` then
    /// `moreAssociatedData` (GCM hashes them as one string: the split only
    /// spares the caller a concatenation). `key` is 32 bytes, `nonce` 12.
    /// Returns false when OpenSSL fails, which happens only when it cannot
    /// allocate.
    static func seal(key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
                     associatedData: UnsafeRawBufferPointer, moreAssociatedData: UnsafeRawBufferPointer,
                     plaintext: UnsafeRawBufferPointer,
                     ciphertext: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer) -> Bool {
        precondition(key.count == keyLength && nonce.count == nonceLength && tag.count == tagLength)
        precondition(ciphertext.count == plaintext.count && plaintext.count < Int(Int32.max))
        guard let context = EVP_CIPHER_CTX_new() else { return false }
        defer {
            EVP_CIPHER_CTX_free(context)
            ERR_clear_error()
        }
        guard EVP_EncryptInit_ex2(context, cipher.pointer, bytes(key), bytes(nonce), nil) == 1 else { return false }
        var written: Int32 = 0
        guard authenticate(associatedData, moreAssociatedData, with: EVP_EncryptUpdate, context) else { return false }
        var total = 0
        if !plaintext.isEmpty {
            guard EVP_EncryptUpdate(context, mutableBytes(ciphertext), &written,
                                    bytes(plaintext), Int32(plaintext.count)) == 1 else { return false }
            total = Int(written)
        }
        // GCM is a stream mode: Final writes nothing, but it must run to compute the tag.
        guard EVP_EncryptFinal_ex(context, mutableBytes(ciphertext).map { $0 + total }, &written) == 1,
              total + Int(written) == plaintext.count,
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, Int32(tagLength), tag.baseAddress) == 1
        else { return false }
        return true
    }

    /// Decrypts `ciphertext` into `plaintext` (the same length) when `tag`
    /// authenticates it with the associated data; returns false otherwise,
    /// with `plaintext` zeroed (GCM decrypts before the tag is checked, so the
    /// buffer briefly holds unauthenticated bytes; they never leave here).
    static func open(key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
                     associatedData: UnsafeRawBufferPointer, moreAssociatedData: UnsafeRawBufferPointer,
                     ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer,
                     plaintext: UnsafeMutableRawBufferPointer) -> Bool {
        precondition(key.count == keyLength && nonce.count == nonceLength && tag.count == tagLength)
        precondition(ciphertext.count == plaintext.count)
        let opened = decrypt(key: key, nonce: nonce, associatedData: associatedData,
                             moreAssociatedData: moreAssociatedData, ciphertext: ciphertext, tag: tag,
                             plaintext: plaintext)
        if !opened, let base = plaintext.baseAddress { base.initializeMemory(as: UInt8.self, repeating: 0, count: plaintext.count) }
        return opened
    }

    private static func decrypt(key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
                                associatedData: UnsafeRawBufferPointer, moreAssociatedData: UnsafeRawBufferPointer,
                                ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer,
                                plaintext: UnsafeMutableRawBufferPointer) -> Bool {
        guard ciphertext.count < Int(Int32.max), let context = EVP_CIPHER_CTX_new() else { return false }
        defer {
            EVP_CIPHER_CTX_free(context)
            ERR_clear_error()
        }
        guard EVP_DecryptInit_ex2(context, cipher.pointer, bytes(key), bytes(nonce), nil) == 1 else { return false }
        var written: Int32 = 0
        guard authenticate(associatedData, moreAssociatedData, with: EVP_DecryptUpdate, context) else { return false }
        var total = 0
        if !ciphertext.isEmpty {
            guard EVP_DecryptUpdate(context, mutableBytes(plaintext), &written,
                                    bytes(ciphertext), Int32(ciphertext.count)) == 1 else { return false }
            total = Int(written)
        }
        // SET_TAG takes a non-const pointer but only copies the tag in.
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(tagLength),
                                  UnsafeMutableRawPointer(mutating: tag.baseAddress)) == 1,
              EVP_DecryptFinal_ex(context, mutableBytes(plaintext).map { $0 + total }, &written) == 1
        else { return false }
        return total + Int(written) == ciphertext.count
    }

    /// Feeds both parts of the associated data to `update` (EVP_EncryptUpdate
    /// or EVP_DecryptUpdate with no output buffer, which is how GCM takes AAD).
    private static func authenticate(
        _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer,
        with update: (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int32>?,
                      UnsafePointer<UInt8>?, Int32) -> Int32,
        _ context: OpaquePointer
    ) -> Bool {
        var written: Int32 = 0
        if !first.isEmpty {
            guard first.count < Int(Int32.max), update(context, nil, &written, bytes(first), Int32(first.count)) == 1
            else { return false }
        }
        if !second.isEmpty {
            guard second.count < Int(Int32.max), update(context, nil, &written, bytes(second), Int32(second.count)) == 1
            else { return false }
        }
        return true
    }

    private static func bytes(_ buffer: UnsafeRawBufferPointer) -> UnsafePointer<UInt8>? {
        buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
    }

    private static func mutableBytes(_ buffer: UnsafeMutableRawBufferPointer) -> UnsafeMutablePointer<UInt8>? {
        buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
    }
}

extension AESGCM {
    /// Array form of `seal`, for tests and known-answer checks: ciphertext and tag.
    static func seal(key: [UInt8], nonce: [UInt8], associatedData: [UInt8], plaintext: [UInt8])
        -> (ciphertext: [UInt8], tag: [UInt8]) {
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: tagLength)
        let sealed = key.withUnsafeBytes { key in
            nonce.withUnsafeBytes { nonce in
                associatedData.withUnsafeBytes { associatedData in
                    plaintext.withUnsafeBytes { plaintext in
                        ciphertext.withUnsafeMutableBytes { ciphertext in
                            tag.withUnsafeMutableBytes { tag in
                                seal(key: key, nonce: nonce, associatedData: associatedData,
                                     moreAssociatedData: UnsafeRawBufferPointer(start: nil, count: 0),
                                     plaintext: plaintext, ciphertext: ciphertext, tag: tag)
                            }
                        }
                    }
                }
            }
        }
        precondition(sealed, "AES-256-GCM failed inside OpenSSL")
        return (ciphertext, tag)
    }

    /// Array form of `open`: the plaintext, or nil when the tag does not authenticate.
    static func open(key: [UInt8], nonce: [UInt8], associatedData: [UInt8], ciphertext: [UInt8], tag: [UInt8]) -> [UInt8]? {
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
        let opened = key.withUnsafeBytes { key in
            nonce.withUnsafeBytes { nonce in
                associatedData.withUnsafeBytes { associatedData in
                    ciphertext.withUnsafeBytes { ciphertext in
                        tag.withUnsafeBytes { tag in
                            plaintext.withUnsafeMutableBytes { plaintext in
                                open(key: key, nonce: nonce, associatedData: associatedData,
                                     moreAssociatedData: UnsafeRawBufferPointer(start: nil, count: 0),
                                     ciphertext: ciphertext, tag: tag, plaintext: plaintext)
                            }
                        }
                    }
                }
            }
        }
        return opened ? plaintext : nil
    }
}
