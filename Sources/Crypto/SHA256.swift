import COpenSSL

/// SHA-256 (FIPS 180-4) through OpenSSL's `EVP_Digest`: token fingerprints
/// in the history, and the owner keys of registries written before tokens
/// were sealed (their migration).
public enum SHA256 {
    public static let digestLength = 32

    /// The 32-byte digest of `message`. OpenSSL fails only when it cannot
    /// allocate, which stops the process like any allocation failure.
    public static func hash(_ message: some Collection<UInt8>) -> [UInt8] {
        let bytes = Array(message)
        return [UInt8](unsafeUninitializedCapacity: digestLength) { output, initialized in
            var length: UInt32 = 0
            let fine = EVP_Digest(bytes, bytes.count, output.baseAddress, &length, EVP_sha256(), nil) == 1
            ERR_clear_error()
            precondition(fine && length == UInt32(digestLength), "SHA-256 failed inside OpenSSL")
            initialized = digestLength
        }
    }
}
