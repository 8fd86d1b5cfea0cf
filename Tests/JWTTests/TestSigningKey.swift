import COpenSSL
import Codecs
@testable import JWT

/// A freshly generated RSA-2048 or P-256 private key for one test: it signs
/// tokens the way an identity provider would (EVP_DigestSign; for ES256 the
/// DER signature converted to R||S) and publishes itself as a JWK.
final class TestSigningKey {
    enum Kind { case rsa, p256 }

    let kind: Kind
    private let key: OpaquePointer

    init(_ kind: Kind, rsaBits: Int32 = 2048) {
        self.kind = kind
        let context = EVP_PKEY_CTX_new_id(kind == .rsa ? EVP_PKEY_RSA : EVP_PKEY_EC, nil)!
        defer { EVP_PKEY_CTX_free(context) }
        precondition(EVP_PKEY_keygen_init(context) == 1)
        switch kind {
        case .rsa: precondition(EVP_PKEY_CTX_set_rsa_keygen_bits(context, rsaBits) == 1)
        case .p256: precondition(EVP_PKEY_CTX_set_group_name(context, "P-256") == 1)
        }
        var generated: OpaquePointer?
        precondition(EVP_PKEY_generate(context, &generated) == 1)
        key = generated!
    }

    deinit {
        EVP_PKEY_free(key)
    }

    var algorithm: String { kind == .rsa ? "RS256" : "ES256" }

    /// The public key as a JWK object (JSON text), with `extra` members
    /// appended verbatim (for example `"alg":"RS256"`).
    func jwk(kid: String?, extra: String = "") -> String {
        var members: [String] = []
        if let kid { members.append("\"kid\":\"\(kid)\"") }
        switch kind {
        case .rsa:
            members += ["\"kty\":\"RSA\"", "\"n\":\"\(Base64URL.encode(modulus))\"",
                        "\"e\":\"\(Base64URL.encode(parameter("e", width: nil)))\""]
        case .p256:
            members += ["\"kty\":\"EC\"", "\"crv\":\"P-256\"",
                        "\"x\":\"\(Base64URL.encode(parameter("qx", width: 32)))\"",
                        "\"y\":\"\(Base64URL.encode(parameter("qy", width: 32)))\""]
        }
        if !extra.isEmpty { members.append(extra) }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// The RSA modulus, big-endian.
    var modulus: [UInt8] { parameter("n", width: nil) }

    /// A big-number parameter of the key, big-endian, left-padded to `width`.
    private func parameter(_ name: String, width: Int?) -> [UInt8] {
        var number: OpaquePointer?
        precondition(EVP_PKEY_get_bn_param(key, name, &number) == 1)
        defer { BN_free(number) }
        let length = width ?? Int((BN_num_bits(number) + 7) / 8)
        var bytes = [UInt8](repeating: 0, count: length)
        precondition(BN_bn2binpad(number, &bytes, Int32(length)) == Int32(length))
        return bytes
    }

    /// The JWS signature of `message`: PKCS#1 v1.5 for RSA, R||S for P-256.
    func sign(_ message: [UInt8]) -> [UInt8] {
        let der = derSignature(message)
        guard kind == .p256 else { return der }
        var cursor: UnsafePointer<UInt8>? = nil
        let signature = der.withUnsafeBufferPointer { buffer in
            cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)!
        }
        defer { ECDSA_SIG_free(signature) }
        var raw = [UInt8](repeating: 0, count: 64)
        raw.withUnsafeMutableBufferPointer { buffer in
            precondition(BN_bn2binpad(ECDSA_SIG_get0_r(signature), buffer.baseAddress, 32) == 32)
            precondition(BN_bn2binpad(ECDSA_SIG_get0_s(signature), buffer.baseAddress! + 32, 32) == 32)
        }
        return raw
    }

    /// The signature as OpenSSL produces it (DER for ECDSA).
    func derSignature(_ message: [UInt8]) -> [UInt8] {
        let context = EVP_MD_CTX_new()!
        defer { EVP_MD_CTX_free(context) }
        precondition(EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1)
        var length = 0
        precondition(EVP_DigestSign(context, nil, &length, message, message.count) == 1)
        var signature = [UInt8](repeating: 0, count: length)
        precondition(EVP_DigestSign(context, &signature, &length, message, message.count) == 1)
        return Array(signature.prefix(length))
    }
}
