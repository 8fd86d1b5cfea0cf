import COpenSSL

/// HMAC-SHA-256 (RFC 2104) through OpenSSL's one-shot `HMAC()`, for HS256
/// signing and verification.
enum HMACSHA256 {
    static let tagLength = 32

    /// The 32-byte tag of `message` under `key`. An empty key is valid HMAC
    /// (the verifier refuses empty secrets itself: anyone could forge with
    /// one). Limits: keys longer than `Int32.max` bytes are clamped by
    /// `HMAC()`'s signature; OpenSSL fails a one-shot HMAC only when it
    /// cannot allocate, which is treated as fatal like any allocation failure.
    static func tag(message: [UInt8], key: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = output.withUnsafeMutableBufferPointer { buffer in
            HMAC(EVP_sha256(), key, Int32(clamping: key.count), message, message.count, buffer.baseAddress, &length)
        }
        ERR_clear_error()
        precondition(result != nil && length == UInt32(tagLength), "HMAC-SHA-256 failed inside OpenSSL")
        return Array(output.prefix(tagLength))
    }
}
