import COpenSSL
import Foundation

/// The `.p8` key APNs provider tokens are signed with: a P-256 private key
/// in PEM (PKCS#8, as Apple issues it). Anything else (an RSA or P-384 key,
/// a public key, an encrypted key, text that is no key) is refused at load
/// with a `ProviderKeyError` that says which, so a wrong file stops the
/// process at start rather than at the first push.
///
/// `@unchecked Sendable` because the key is never modified after `init`:
/// OpenSSL 3 lets many threads sign with one `EVP_PKEY`, each with its own
/// `EVP_MD_CTX`, which `sign` creates per call.
public final class ProviderKey: @unchecked Sendable {
    private let key: OpaquePointer

    /// Reads and checks the key file at `path`.
    public convenience init(contentsOf path: String) throws(ProviderKeyError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ProviderKeyError(message: "cannot read the APNs key file \(path)")
        }
        try self.init(pem: [UInt8](data), source: path)
    }

    /// Checks PEM text; `source` names it in errors.
    public init(pem: [UInt8], source: String = "the APNs key") throws(ProviderKeyError) {
        defer { ERR_clear_error() }
        guard let loaded = registry_private_key_from_pem(pem, pem.count) else {
            let text = String(decoding: pem, as: UTF8.self)
            if text.contains("-----BEGIN PUBLIC KEY-----") {
                throw ProviderKeyError(message: "\(source) holds a public key; APNs needs the private key (.p8)")
            }
            if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
                throw ProviderKeyError(message: "\(source) holds an encrypted private key; APNs needs the unencrypted .p8")
            }
            throw ProviderKeyError(message: "\(source) holds no PEM private key (a .p8 begins with -----BEGIN PRIVATE KEY-----)")
        }
        guard EVP_PKEY_get_base_id(loaded) == EVP_PKEY_EC else {
            let type = EVP_PKEY_get0_type_name(loaded).map { String(cString: $0) } ?? "non-EC"
            EVP_PKEY_free(loaded)
            throw ProviderKeyError(message: "\(source) holds an \(type) key; APNs needs a P-256 (ES256) key")
        }
        var group = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(loaded, &group, group.count, &length) == 1,
              String(decoding: group[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1" else {
            let name = String(decoding: group[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            EVP_PKEY_free(loaded)
            throw ProviderKeyError(message: "\(source) holds an EC key on \(name.isEmpty ? "an unknown curve" : name); APNs needs P-256 (ES256)")
        }
        key = loaded
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// The ES256 signature of `message`: R||S, 32 bytes each (RFC 7518
    /// §3.4), not the DER OpenSSL produces. `nil` only when OpenSSL fails
    /// (out of memory).
    func sign(_ message: [UInt8]) -> [UInt8]? {
        defer { ERR_clear_error() }
        guard let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else { return nil }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else { return nil }
        var der = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &der, &length, message, message.count) == 1 else { return nil }
        return Self.rawSignature(der: Array(der[..<length]))
    }

    /// Converts a DER `ECDSA-Sig-Value` into R||S.
    private static func rawSignature(der: [UInt8]) -> [UInt8]? {
        let parsed = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let parsed else { return nil }
        defer { ECDSA_SIG_free(parsed) }
        guard let r = ECDSA_SIG_get0_r(parsed), let s = ECDSA_SIG_get0_s(parsed) else { return nil }
        var raw = [UInt8](repeating: 0, count: 64)
        let written = raw.withUnsafeMutableBufferPointer { buffer in
            (BN_bn2binpad(r, buffer.baseAddress, 32), BN_bn2binpad(s, buffer.baseAddress! + 32, 32))
        }
        return written == (32, 32) ? raw : nil
    }
}

/// Why a provider key file was refused.
public struct ProviderKeyError: Error, Equatable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
