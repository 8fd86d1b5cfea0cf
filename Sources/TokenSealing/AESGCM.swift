import COpenSSL
import Synchronization

/// AES-256-GCM (NIST SP 800-38D) through OpenSSL's EVP interface, with a
/// 96-bit nonce and a 128-bit tag: the primitive under `TokenSealer`.
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

    /// The shared AES-256-GCM implementation, fetched from the default
    /// provider once: `EVP_aes_256_gcm()` would look it up again (under a
    /// lock) on every init. A fetched `EVP_CIPHER` is immutable.
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

    /// One key, prepared once: an `EVP_CIPHER_CTX` holding the expanded AES
    /// key and GCM's hash subkey. Nothing uses the template directly; each
    /// operation works on its own copy (`EVP_CIPHER_CTX_copy` reads the
    /// template through a const pointer), so any number of threads may seal
    /// and open with one `Key` at once. Measured on OpenSSL 3.0 (32-byte
    /// token): a copy plus a nonce-only init seals in about 390 ns, a fresh
    /// context keyed on every call in about 570 ns (with the fetched cipher;
    /// 900 ns with `EVP_aes_256_gcm()`).
    final class Key: @unchecked Sendable {
        private let template: OpaquePointer

        /// `bytes` is 32 bytes. Stops the process when OpenSSL cannot
        /// allocate (as any allocation failure does).
        init(_ bytes: [UInt8]) {
            precondition(bytes.count == keyLength)
            let template = bytes.withUnsafeBytes { bytes -> OpaquePointer? in
                guard let template = EVP_CIPHER_CTX_new() else { return nil }
                guard EVP_EncryptInit_ex2(template, cipher.pointer, AESGCM.bytes(bytes), nil, nil) == 1 else {
                    EVP_CIPHER_CTX_free(template)
                    return nil
                }
                return template
            }
            guard let template else {
                ERR_clear_error()
                preconditionFailure("AES-256-GCM key setup failed inside OpenSSL")
            }
            self.template = template
        }

        /// The template's key schedule is cleansed by OpenSSL as it is freed
        /// (so are the pool's contexts, as the pool is freed with the key).
        deinit {
            EVP_CIPHER_CTX_free(template)
        }

        /// Keyed contexts that finished calls handed back: the next call only
        /// sets its nonce and direction (`EVP_CipherInit_ex2` without cipher
        /// or key keeps the key schedule), instead of allocating a context,
        /// copying the template and wiping and freeing it afterwards. A
        /// context that failed is freed, never reused.
        private let pool = ContextPool()

        /// Runs `body` on a context of this key initialised with `nonce` for
        /// encrypting or decrypting; hands it back to the pool when `body`
        /// succeeded, else frees it. False when OpenSSL fails (it cannot allocate) or `body` does.
        private func withContext(nonce: UnsafeRawBufferPointer, encrypting: Bool,
                                 _ body: (OpaquePointer) -> Bool) -> Bool {
            let taken = pool.take()
            var context = taken?.context
            if context == nil {
                context = EVP_CIPHER_CTX_new()
                if let fresh = context, EVP_CIPHER_CTX_copy(fresh, template) != 1 {
                    EVP_CIPHER_CTX_free(fresh)
                    context = nil
                }
            }
            guard let context else {
                if let slot = taken?.slot { pool.drop(nil, from: slot) }
                return false
            }
            guard EVP_CipherInit_ex2(context, nil, nil, bytes(nonce), encrypting ? 1 : 0, nil) == 1, body(context) else {
                if let slot = taken?.slot { pool.drop(context, from: slot) } else { EVP_CIPHER_CTX_free(context) }
                return false
            }
            if let slot = taken?.slot { pool.give(context, to: slot) } else { EVP_CIPHER_CTX_free(context) }
            return true
        }

        /// Encrypts `plaintext` into `ciphertext` (the same length) and
        /// writes the 16-byte tag to `tag`, authenticating `associatedData`
        /// then `moreAssociatedData` (GCM hashes them as one string: the split
        /// only spares the caller a concatenation). `nonce` is 12 bytes.
        /// Returns false when OpenSSL fails, which happens only when it cannot allocate.
        func seal(nonce: UnsafeRawBufferPointer,
                  associatedData: UnsafeRawBufferPointer, moreAssociatedData: UnsafeRawBufferPointer,
                  plaintext: UnsafeRawBufferPointer,
                  ciphertext: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer) -> Bool {
            precondition(nonce.count == nonceLength && tag.count == tagLength)
            precondition(ciphertext.count == plaintext.count && plaintext.count < Int(Int32.max))
            let sealed = withContext(nonce: nonce, encrypting: true) { context in
                var written: Int32 = 0
                guard authenticate(associatedData, moreAssociatedData, with: EVP_EncryptUpdate, context) else { return false }
                var total = 0
                if !plaintext.isEmpty {
                    guard EVP_EncryptUpdate(context, mutableBytes(ciphertext), &written,
                                            bytes(plaintext), Int32(plaintext.count)) == 1 else { return false }
                    total = Int(written)
                }
                // GCM is a stream mode: Final writes nothing, but it must run to compute the tag.
                return EVP_EncryptFinal_ex(context, mutableBytes(ciphertext).map { $0 + total }, &written) == 1
                    && total + Int(written) == plaintext.count
                    && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, Int32(tagLength), tag.baseAddress) == 1
            }
            return sealed ? true : failed()
        }

        /// Decrypts `ciphertext` into `plaintext` (the same length) when
        /// `tag` authenticates it with the associated data; returns false
        /// otherwise, with `plaintext` zeroed (GCM decrypts before the tag is
        /// checked, so the buffer briefly holds unauthenticated bytes; they
        /// never leave here).
        func open(nonce: UnsafeRawBufferPointer,
                  associatedData: UnsafeRawBufferPointer, moreAssociatedData: UnsafeRawBufferPointer,
                  ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer,
                  plaintext: UnsafeMutableRawBufferPointer) -> Bool {
            precondition(nonce.count == nonceLength && tag.count == tagLength)
            precondition(ciphertext.count == plaintext.count)
            guard decrypt(nonce: nonce, associatedData: associatedData, moreAssociatedData: moreAssociatedData,
                          ciphertext: ciphertext, tag: tag, plaintext: plaintext) else {
                if let base = plaintext.baseAddress {
                    base.initializeMemory(as: UInt8.self, repeating: 0, count: plaintext.count)
                }
                return failed()
            }
            return true
        }

        private func decrypt(nonce: UnsafeRawBufferPointer,
                             associatedData: UnsafeRawBufferPointer, moreAssociatedData: UnsafeRawBufferPointer,
                             ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer,
                             plaintext: UnsafeMutableRawBufferPointer) -> Bool {
            guard ciphertext.count < Int(Int32.max) else { return false }
            return withContext(nonce: nonce, encrypting: false) { context in
                guard authenticate(associatedData, moreAssociatedData, with: EVP_DecryptUpdate, context) else { return false }
                var written: Int32 = 0
                var total = 0
                if !ciphertext.isEmpty {
                    guard EVP_DecryptUpdate(context, mutableBytes(plaintext), &written,
                                            bytes(ciphertext), Int32(ciphertext.count)) == 1 else { return false }
                    total = Int(written)
                }
                // SET_TAG takes a non-const pointer but only copies the tag in.
                return EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(tagLength),
                                           UnsafeMutableRawPointer(mutating: tag.baseAddress)) == 1
                    && EVP_DecryptFinal_ex(context, mutableBytes(plaintext).map { $0 + total }, &written) == 1
                    && total + Int(written) == ciphertext.count
            }
        }

        /// Empties OpenSSL's error queue (this thread's) and answers false.
        /// Only failures clear it: on success the queue is untouched, and
        /// clearing costs a thread-local lookup on every call.
        private func failed() -> Bool {
            ERR_clear_error()
            return false
        }
    }

    /// Feeds both parts of the associated data to `update` (EVP_EncryptUpdate
    /// or EVP_DecryptUpdate with no output buffer, which is how GCM takes
    /// AAD) in one call: each EVP update costs about 500 instructions of
    /// dispatch, more than copying a few dozen bytes to the stack.
    private static func authenticate(
        _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer,
        with update: (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int32>?,
                      UnsafePointer<UInt8>?, Int32) -> Int32,
        _ context: OpaquePointer
    ) -> Bool {
        let total = first.count + second.count
        guard total < Int(Int32.max) else { return false }
        var written: Int32 = 0
        if first.isEmpty || second.isEmpty {
            let only = first.isEmpty ? second : first
            return only.isEmpty || update(context, nil, &written, bytes(only), Int32(only.count)) == 1
        }
        return withUnsafeTemporaryAllocation(byteCount: total, alignment: 1) { joined in
            joined.copyMemory(from: first)
            UnsafeMutableRawBufferPointer(rebasing: joined[first.count...]).copyMemory(from: second)
            return update(context, nil, &written, bytes(UnsafeRawBufferPointer(joined)), Int32(total)) == 1
        }
    }

    private static func bytes(_ buffer: UnsafeRawBufferPointer) -> UnsafePointer<UInt8>? {
        buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
    }

    private static func mutableBytes(_ buffer: UnsafeMutableRawBufferPointer) -> UnsafeMutablePointer<UInt8>? {
        buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
    }
}

extension AESGCM {
    /// Array form of `Key.seal`, for tests and known-answer checks: ciphertext and tag.
    static func seal(key: [UInt8], nonce: [UInt8], associatedData: [UInt8], plaintext: [UInt8])
        -> (ciphertext: [UInt8], tag: [UInt8]) {
        let key = Key(key)
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: tagLength)
        let sealed = nonce.withUnsafeBytes { nonce in
            associatedData.withUnsafeBytes { associatedData in
                plaintext.withUnsafeBytes { plaintext in
                    ciphertext.withUnsafeMutableBytes { ciphertext in
                        tag.withUnsafeMutableBytes { tag in
                            key.seal(nonce: nonce, associatedData: associatedData,
                                     moreAssociatedData: UnsafeRawBufferPointer(start: nil, count: 0),
                                     plaintext: plaintext, ciphertext: ciphertext, tag: tag)
                        }
                    }
                }
            }
        }
        precondition(sealed, "AES-256-GCM failed inside OpenSSL")
        return (ciphertext, tag)
    }

    /// Array form of `Key.open`: the plaintext, or nil when the tag does not authenticate.
    static func open(key: [UInt8], nonce: [UInt8], associatedData: [UInt8], ciphertext: [UInt8], tag: [UInt8]) -> [UInt8]? {
        let key = Key(key)
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
        let opened = nonce.withUnsafeBytes { nonce in
            associatedData.withUnsafeBytes { associatedData in
                ciphertext.withUnsafeBytes { ciphertext in
                    tag.withUnsafeBytes { tag in
                        plaintext.withUnsafeMutableBytes { plaintext in
                            key.open(nonce: nonce, associatedData: associatedData,
                                     moreAssociatedData: UnsafeRawBufferPointer(start: nil, count: 0),
                                     ciphertext: ciphertext, tag: tag, plaintext: plaintext)
                        }
                    }
                }
            }
        }
        return opened ? plaintext : nil
    }
}
