import Crypto
import Codecs
import COpenSSL
import Foundation

/// `registry-bench mint-jwts`: device JWTs for the benchmark's users, one
/// file per algorithm, line `i + 1` holding the token of user `i * stride`
/// (`sub` = `BenchDataSet.userId(i * stride)`), plus the JWKS that makes
/// `registryd` accept the RS256 and ES256 ones. A stride above 1 samples a
/// large data set evenly (the wrk scripts then address only those users).
///
/// - HS256: signed with the secret file's bytes (one trailing newline
///   removed, as registryd reads it), no `kid`, so the server's
///   `--jwt-hs256-secret-file` verifies it.
/// - RS256 / ES256: signed with private keys that `openssl genpkey -outform
///   DER` made (PKCS#8 DER, read with `d2i_AutoPrivateKey`); `kid`
///   `bench-rsa` / `bench-ec`; the public halves go to `jwks.json`.
///
/// Thousands of tokens per second in one process, where one `openssl`
/// process per signature would take minutes.
struct MintOptions {
    var users = 20_000
    var stride = 1
    var ttlSeconds = 86_400
    var hs256SecretFile: String?
    var rsaKeyFile: String?
    var ecKeyFile: String?
    var outDirectory = "."

    static let usage = """
        usage: registry-bench mint-jwts --users N --out-dir DIR [--stride N] [--ttl SECONDS]
                                        [--hs256-secret FILE] [--rsa-key DER] [--ec-key DER]
        """

    init?(_ arguments: [String]) {
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { return nil }
            switch flag {
            case "--users": guard let n = Int(value), n > 0 else { return nil }; users = n
            case "--stride": guard let n = Int(value), n > 0 else { return nil }; stride = n
            case "--ttl": guard let n = Int(value), n > 0 else { return nil }; ttlSeconds = n
            case "--hs256-secret": hs256SecretFile = value
            case "--rsa-key": rsaKeyFile = value
            case "--ec-key": ecKeyFile = value
            case "--out-dir": outDirectory = value
            default: return nil
            }
        }
    }
}

enum JWTMinter {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func run(_ options: MintOptions) {
        do {
            let expires = Int(Date().timeIntervalSince1970) + options.ttlSeconds
            var jwks: [String] = []
            if let path = options.hs256SecretFile {
                var secret = try bytes(path)
                if secret.last == UInt8(ascii: "\n") { secret.removeLast() }
                try write(options, "hs256.jwt", header: #"{"alg":"HS256","typ":"JWT"}"#, expires: expires) { input in
                    HMACSHA256.tag(message: input, key: secret)
                }
            }
            if let path = options.rsaKeyFile {
                let key = try SigningKey(der: try bytes(path), kind: .rsa)
                jwks.append(key.jwk(kid: "bench-rsa"))
                try write(options, "rs256.jwt", header: #"{"alg":"RS256","kid":"bench-rsa","typ":"JWT"}"#,
                          expires: expires) { try key.sign($0) }
            }
            if let path = options.ecKeyFile {
                let key = try SigningKey(der: try bytes(path), kind: .p256)
                jwks.append(key.jwk(kid: "bench-ec"))
                try write(options, "es256.jwt", header: #"{"alg":"ES256","kid":"bench-ec","typ":"JWT"}"#,
                          expires: expires) { try key.sign($0) }
            }
            if !jwks.isEmpty {
                let document = #"{"keys":["# + jwks.joined(separator: ",") + "]}\n"
                try Data(document.utf8).write(to: URL(fileURLWithPath: options.outDirectory + "/jwks.json"))
            }
        } catch {
            FileHandle.standardError.write(Data("registry-bench mint-jwts failed: \(error)\n".utf8))
            exit(1)
        }
    }

    private static func write(_ options: MintOptions, _ name: String, header: String, expires: Int,
                              sign: ([UInt8]) throws -> [UInt8]) throws {
        let head = Base64URL.encode(Array(header.utf8))
        var out = ""
        out.reserveCapacity(options.users * 400)
        for i in 0..<options.users {
            let claims = #"{"exp":\#(expires),"sub":"\#(BenchDataSet.userId(i * options.stride))"}"#
            let input = head + "." + Base64URL.encode(Array(claims.utf8))
            out += input + "." + Base64URL.encode(try sign(Array(input.utf8))) + "\n"
        }
        try Data(out.utf8).write(to: URL(fileURLWithPath: options.outDirectory + "/" + name))
    }

    private static func bytes(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else { throw Failure(description: "cannot read \(path)") }
        return Array(data)
    }

    /// A private key read from PKCS#8 DER; signs as JWS wants (PKCS#1 v1.5
    /// for RSA, R||S for P-256) and publishes its public half as a JWK.
    final class SigningKey {
        enum Kind { case rsa, p256 }
        let kind: Kind
        private let key: OpaquePointer

        init(der: [UInt8], kind: Kind) throws {
            self.kind = kind
            let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
                var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
                return d2i_AutoPrivateKey(nil, &cursor, buffer.count)
            }
            guard let parsed else { throw Failure(description: "not a DER private key") }
            key = parsed
        }

        deinit { EVP_PKEY_free(key) }

        func jwk(kid: String) -> String {
            switch kind {
            case .rsa:
                return #"{"kty":"RSA","kid":"\#(kid)","alg":"RS256","use":"sig","n":"\#(Base64URL.encode(parameter("n", width: nil)))","e":"\#(Base64URL.encode(parameter("e", width: nil)))"}"#
            case .p256:
                return #"{"kty":"EC","kid":"\#(kid)","alg":"ES256","use":"sig","crv":"P-256","x":"\#(Base64URL.encode(parameter("qx", width: 32)))","y":"\#(Base64URL.encode(parameter("qy", width: 32)))"}"#
            }
        }

        private func parameter(_ name: String, width: Int?) -> [UInt8] {
            var number: OpaquePointer?
            precondition(EVP_PKEY_get_bn_param(key, name, &number) == 1, "key parameter \(name)")
            defer { BN_free(number) }
            let length = width ?? Int((BN_num_bits(number) + 7) / 8)
            var bytes = [UInt8](repeating: 0, count: length)
            precondition(BN_bn2binpad(number, &bytes, Int32(length)) == Int32(length))
            return bytes
        }

        func sign(_ message: [UInt8]) throws -> [UInt8] {
            let context = EVP_MD_CTX_new()!
            defer { EVP_MD_CTX_free(context) }
            guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else { throw Failure(description: "sign init") }
            var length = 0
            guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else { throw Failure(description: "sign") }
            var der = [UInt8](repeating: 0, count: length)
            guard EVP_DigestSign(context, &der, &length, message, message.count) == 1 else { throw Failure(description: "sign") }
            der = Array(der.prefix(length))
            guard kind == .p256 else { return der }
            let signature: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
                var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
                return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
            }
            guard let signature else { throw Failure(description: "ECDSA signature") }
            defer { ECDSA_SIG_free(signature) }
            var raw = [UInt8](repeating: 0, count: 64)
            raw.withUnsafeMutableBufferPointer { buffer in
                _ = BN_bn2binpad(ECDSA_SIG_get0_r(signature), buffer.baseAddress, 32)
                _ = BN_bn2binpad(ECDSA_SIG_get0_s(signature), buffer.baseAddress! + 32, 32)
            }
            return raw
        }
    }
}
