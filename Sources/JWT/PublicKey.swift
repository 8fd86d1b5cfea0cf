import COpenSSL

/// An OpenSSL public key (`EVP_PKEY`), built once per JWKS key and freed in
/// `deinit`, that verifies RS256 or ES256 signatures.
///
/// `@unchecked Sendable` because the key is never modified after `init`:
/// OpenSSL 3 allows one `EVP_PKEY` to be used for verification by many
/// threads at once, each with its own `EVP_MD_CTX`, which is what `verify`
/// creates per call.
final class PublicKey: @unchecked Sendable {
    /// The smallest RSA modulus accepted, in bits (NIST SP 800-131A).
    static let minimumRSABits: Int32 = 2048

    let algorithm: JWSAlgorithm
    private let key: OpaquePointer

    private init(algorithm: JWSAlgorithm, key: OpaquePointer) {
        self.algorithm = algorithm
        self.key = key
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// An RS256 key from the big-endian modulus and exponent of a JWK; `nil`
    /// when OpenSSL refuses it or the modulus is under `minimumRSABits`.
    static func rsa(modulus: [UInt8], exponent: [UInt8]) -> PublicKey? {
        defer { ERR_clear_error() }
        guard !modulus.isEmpty, !exponent.isEmpty,
              let built = registry_rsa_public_key(modulus, modulus.count, exponent, exponent.count) else { return nil }
        let key = PublicKey(algorithm: .rs256, key: built)
        guard EVP_PKEY_get_bits(built) >= minimumRSABits, key.passesPublicCheck() else { return nil }
        return key
    }

    /// An ES256 key from the 32-byte big-endian coordinates of a P-256 JWK;
    /// `nil` when the point is not on the curve.
    static func p256(x: [UInt8], y: [UInt8]) -> PublicKey? {
        defer { ERR_clear_error() }
        guard x.count == 32, y.count == 32 else { return nil }
        let point: [UInt8] = [0x04] + x + y
        guard let built = registry_p256_public_key(point, point.count) else { return nil }
        let key = PublicKey(algorithm: .es256, key: built)
        return key.passesPublicCheck() ? key : nil
    }

    private func passesPublicCheck() -> Bool {
        defer { ERR_clear_error() }
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else { return false }
        defer { EVP_PKEY_CTX_free(context) }
        return EVP_PKEY_public_check(context) == 1
    }

    /// Verifies a JWS signature over `message` (the ASCII `header.payload`).
    /// ES256 signatures are the 64-byte R||S of RFC 7518 §3.4; any other
    /// length fails.
    func verify(message: [UInt8], signature: [UInt8]) -> Bool {
        defer { ERR_clear_error() }
        let encoded: [UInt8]
        switch algorithm {
        case .es256:
            guard let der = Self.derSignature(rawP256: signature) else { return false }
            encoded = der
        case .rs256, .hs256:
            encoded = signature
        }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return false }
        return EVP_DigestVerify(context, encoded, encoded.count, message, message.count) == 1
    }

    /// Converts R||S into the DER `ECDSA-Sig-Value` OpenSSL verifies.
    private static func derSignature(rawP256 signature: [UInt8]) -> [UInt8]? {
        guard signature.count == 64, let ecdsa = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(ecdsa) }
        guard let r = BN_bin2bn(signature, 32, nil) else { return nil }
        guard let s = signature[32...].withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, 32, nil) }) else {
            BN_free(r)
            return nil
        }
        guard ECDSA_SIG_set0(ecdsa, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(ecdsa, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(ecdsa, &cursor)
        }
        return written == length ? der : nil
    }
}
