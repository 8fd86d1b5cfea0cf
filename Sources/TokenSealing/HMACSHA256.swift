import COpenSSL

/// HMAC-SHA-256 (RFC 2104) through OpenSSL's one-shot `HMAC()`, the same call
/// `JWT` signs HS256 with (this target does not depend on `JWT`, so the few
/// lines are repeated rather than shared).
enum HMACSHA256 {
    static let tagLength = 32

    /// The 32-byte tag of `message` under `key`. OpenSSL fails a one-shot
    /// HMAC only when it cannot allocate, which is treated as fatal like any
    /// allocation failure.
    static func tag(message: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer) -> [UInt8] {
        precondition(key.count < Int(Int32.max))
        var length: UInt32 = 0
        let output = [UInt8](unsafeUninitializedCapacity: Int(EVP_MAX_MD_SIZE)) { buffer, initialized in
            let result = HMAC(EVP_sha256(), key.baseAddress, Int32(key.count),
                              message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count,
                              buffer.baseAddress, &length)
            ERR_clear_error()
            precondition(result != nil && length == UInt32(tagLength), "HMAC-SHA-256 failed inside OpenSSL")
            initialized = tagLength
        }
        return output
    }

    /// Array form of `tag`.
    static func tag(message: [UInt8], key: [UInt8]) -> [UInt8] {
        message.withUnsafeBytes { message in key.withUnsafeBytes { key in tag(message: message, key: key) } }
    }
}
