import COpenSSL
import Codecs
import JSON

/// A private key that signs JWS tokens (`JWTSigner.sign`): a P-256 EC key
/// signs ES256, an RSA key of at least 2048 bits RS256. It is read from
/// unencrypted PEM (PKCS#8 `BEGIN PRIVATE KEY`, or the traditional
/// `BEGIN EC PRIVATE KEY` / `BEGIN RSA PRIVATE KEY`) or the same in DER;
/// anything else (a public key, an encrypted key, another curve or key
/// type, a small RSA key, text that is no key) is refused at load with a
/// `SigningKeyError` that says which, so a wrong file stops the process at
/// start rather than at the first signature.
///
/// `@unchecked Sendable` because the `EVP_PKEY` is never modified after
/// `init`: OpenSSL 3 lets many threads sign with one key at once, each with
/// its own `EVP_MD_CTX`, which `sign` creates per call.
public final class SigningKey: @unchecked Sendable {
    /// The largest key file `init(contentsOf:)` reads; a PEM key of any
    /// accepted kind is a few kilobytes.
    static let maximumFileSize = 1 << 20

    /// `.es256` or `.rs256`, never `.hs256`.
    public let algorithm: JWSAlgorithm
    private let key: OpaquePointer

    /// Reads and checks the PEM key file at `path`.
    public convenience init(contentsOf path: String) throws(SigningKeyError) {
        guard let pem = Self.contents(ofFile: path) else {
            throw SigningKeyError(.unreadable, "cannot read the key file \(path) (or it is over 1 MiB)")
        }
        try self.init(pem: pem, source: path)
    }

    /// Checks PEM text; `source` names it in errors (a path, or words like
    /// "the FCM service account key").
    public convenience init(pem: [UInt8], source: String) throws(SigningKeyError) {
        guard let loaded = registry_private_key_from_pem(pem, pem.count) else {
            ERR_clear_error()
            let text = String(decoding: pem, as: UTF8.self)
            if text.contains("PUBLIC KEY-----") {
                throw SigningKeyError(.publicKey, "\(source) holds a public key; signing needs the private key")
            }
            if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED") {
                throw SigningKeyError(.encrypted, "\(source) holds an encrypted private key; signing needs it unencrypted")
            }
            throw SigningKeyError(.noPrivateKey,
                                  "\(source) holds no PEM private key (one that begins with -----BEGIN PRIVATE KEY-----)")
        }
        try self.init(taking: loaded, source: source)
    }

    /// Checks DER (unencrypted PKCS#8, or a traditional RSA or SEC1 EC
    /// private key, as `openssl genpkey -outform DER` writes them); `source`
    /// names it in errors.
    public convenience init(der: [UInt8], source: String) throws(SigningKeyError) {
        let parsed = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_AutoPrivateKey(nil, &cursor, buffer.count)
        }
        guard let parsed else {
            ERR_clear_error()
            throw SigningKeyError(.noPrivateKey,
                                  "\(source) holds no unencrypted DER private key (PKCS#8, or a traditional RSA or EC key)")
        }
        try self.init(taking: parsed, source: source)
    }

    /// Takes `loaded` over: keeps it if it signs ES256 or RS256, frees it
    /// and throws otherwise.
    private init(taking loaded: OpaquePointer, source: String) throws(SigningKeyError) {
        defer { ERR_clear_error() }
        do throws(SigningKeyError) {
            algorithm = try Self.algorithm(of: loaded, source: source)
        } catch {
            EVP_PKEY_free(loaded)
            throw error
        }
        key = loaded
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// ES256 for a P-256 key, RS256 for an RSA key of `PublicKey.minimumRSABits`
    /// or more; any other key is refused.
    private static func algorithm(of key: OpaquePointer, source: String) throws(SigningKeyError) -> JWSAlgorithm {
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_EC:
            var group = [CChar](repeating: 0, count: 64)
            var length = 0
            let name = EVP_PKEY_get_group_name(key, &group, group.count, &length) == 1
                ? String(decoding: group[..<min(length, group.count)].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
            guard name == "prime256v1" else {
                throw SigningKeyError(.unsupportedCurve(name),
                                      "\(source) holds an EC key on \(name.isEmpty ? "an unknown curve" : name); ES256 needs P-256")
            }
            return .es256
        case EVP_PKEY_RSA:
            let bits = EVP_PKEY_get_bits(key)
            guard bits >= PublicKey.minimumRSABits else {
                throw SigningKeyError(.rsaTooSmall(bits: Int(bits)),
                                      "\(source) holds a \(bits)-bit RSA key; RS256 needs at least \(PublicKey.minimumRSABits) bits")
            }
            return .rs256
        default:
            let type = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "unknown"
            throw SigningKeyError(.unsupportedKeyType(type),
                                  "\(source) holds an \(type) key; signing needs a P-256 (ES256) or RSA (RS256) key")
        }
    }

    /// The JWS signature of `message` (the ASCII `header.payload`): for
    /// ES256 R||S, 32 bytes each (RFC 7518 §3.4), not the DER OpenSSL
    /// produces; for RS256 RSASSA-PKCS1-v1_5 with SHA-256. `nil` only when
    /// OpenSSL fails (out of memory).
    public func sign(_ message: [UInt8]) -> [UInt8]? {
        defer { ERR_clear_error() }
        guard let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else { return nil }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else { return nil }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else { return nil }
        signature.removeSubrange(length...)
        return algorithm == .es256 ? Self.rawSignature(der: signature) : signature
    }

    /// The public half as a JWK: `kty`, `kid` (when given), `alg`,
    /// `use: sig`, then `n`, `e` (RSA) or `crv`, `x`, `y` (P-256), in that
    /// order; what a JWKS that verifies this key's tokens holds.
    public func publicJWK(keyId: String? = nil) -> JSONWriter.Value {
        var members: [(String, JSONWriter.Value)] = [("kty", .string(algorithm == .rs256 ? "RSA" : "EC"))]
        if let keyId { members.append(("kid", .string(keyId))) }
        members += [("alg", .string(algorithm.rawValue)), ("use", .string("sig"))]
        if algorithm == .rs256 {
            members += [("n", .string(Base64URL.encode(parameter("n", width: nil)))),
                        ("e", .string(Base64URL.encode(parameter("e", width: nil))))]
        } else {
            members += [("crv", .string("P-256")),
                        ("x", .string(Base64URL.encode(parameter("qx", width: 32)))),
                        ("y", .string(Base64URL.encode(parameter("qy", width: 32))))]
        }
        return .object(members)
    }

    /// A big-number parameter of the key, big-endian, left-padded to
    /// `width`. The parameters asked for exist on every key `init` accepts.
    private func parameter(_ name: String, width: Int?) -> [UInt8] {
        defer { ERR_clear_error() }
        var number: OpaquePointer?
        precondition(EVP_PKEY_get_bn_param(key, name, &number) == 1, "key parameter \(name)")
        defer { BN_free(number) }
        let length = width ?? Int((BN_num_bits(number) + 7) / 8)
        var bytes = [UInt8](repeating: 0, count: length)
        precondition(BN_bn2binpad(number, &bytes, Int32(length)) == Int32(length), "key parameter \(name)")
        return bytes
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

    /// The bytes of the file at `path` through an OpenSSL `BIO` (this module
    /// does without Foundation); `nil` when it cannot be opened or read, or
    /// is larger than `maximumFileSize`.
    private static func contents(ofFile path: String) -> [UInt8]? {
        defer { ERR_clear_error() }
        guard let file = BIO_new_file(path, "rb") else { return nil }
        defer { BIO_free(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let read = BIO_read(file, &chunk, Int32(chunk.count))
            if read > 0 {
                bytes += chunk[..<Int(read)]
                if bytes.count > maximumFileSize { return nil }
            } else {
                return read == 0 ? bytes : nil
            }
        }
    }
}

/// Why a signing key was refused: `reason` for callers that word it their
/// own way (`ProviderKey` speaks of APNs and `.p8` files), `message` to show.
public struct SigningKeyError: Error, Equatable, CustomStringConvertible {
    public enum Reason: Equatable, Sendable {
        /// The file could not be read (or is over 1 MiB).
        case unreadable
        /// The text holds no PEM private key OpenSSL can read (or the bytes
        /// no unencrypted DER one).
        case noPrivateKey
        /// The text holds a public key only.
        case publicKey
        /// The private key is encrypted (PKCS#8 or traditional PEM).
        case encrypted
        /// Neither EC nor RSA: OpenSSL's name for the type (`ED25519`, `RSA-PSS`, …).
        case unsupportedKeyType(String)
        /// An EC key on another curve than P-256: its name (`secp384r1`), empty when unknown.
        case unsupportedCurve(String)
        /// An RSA key under `PublicKey.minimumRSABits`.
        case rsaTooSmall(bits: Int)
    }

    public let reason: Reason
    public let message: String
    public var description: String { message }

    init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }
}
