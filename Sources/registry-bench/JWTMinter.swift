import Foundation
import JSON
import JWT

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
///   DER` made (PEM is read too) through JWT's `SigningKey`;
///   `kid` `bench-rsa` / `bench-ec`; the public halves go to `jwks.json`.
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
            let expires = Int64(Date().timeIntervalSince1970) + Int64(options.ttlSeconds)
            var jwks: [JSONWriter.Value] = []
            if let path = options.hs256SecretFile {
                var secret = try bytes(path)
                if secret.last == UInt8(ascii: "\n") { secret.removeLast() }
                try write(options, "hs256.jwt") { subject in
                    JWTSigner.hs256(claims: ["exp": .int(expires), "sub": .string(subject)], secret: secret)
                }
            }
            let signed: [(String?, JWSAlgorithm, String, String)] = [(options.rsaKeyFile, .rs256, "rs256.jwt", "bench-rsa"),
                                                                     (options.ecKeyFile, .es256, "es256.jwt", "bench-ec")]
            for case let (path?, algorithm, name, keyId) in signed {
                let key = try signingKey(path, expected: algorithm)
                jwks.append(key.publicJWK(keyId: keyId))
                try write(options, name) { subject in
                    JWTSigner.sign(header: [("kid", .string(keyId)), ("typ", .string("JWT"))],
                                   claims: [("exp", .int(expires)), ("sub", .string(subject))], key: key)
                }
            }
            if !jwks.isEmpty {
                let document = JSONWriter.encode(.object([("keys", .array(jwks))])) + [UInt8(ascii: "\n")]
                try Data(document).write(to: URL(fileURLWithPath: options.outDirectory + "/jwks.json"))
            }
        } catch {
            FileHandle.standardError.write(Data("registry-bench mint-jwts failed: \(error)\n".utf8))
            exit(1)
        }
    }

    /// One token a line, for users `0, stride, 2 * stride, …`.
    private static func write(_ options: MintOptions, _ name: String, token: (String) -> String?) throws {
        var out = ""
        out.reserveCapacity(options.users * 400)
        for i in 0..<options.users {
            guard let line = token(BenchDataSet.userId(i * options.stride)) else { throw Failure(description: "sign (\(name))") }
            out += line + "\n"
        }
        try Data(out.utf8).write(to: URL(fileURLWithPath: options.outDirectory + "/" + name))
    }

    /// The key in a file of `openssl genpkey -outform DER` (a traditional
    /// RSA or SEC1 EC key, or PKCS#8), or in PEM.
    private static func signingKey(_ path: String, expected: JWSAlgorithm) throws -> SigningKey {
        let contents = try bytes(path)
        let key = contents.starts(with: Array("-----BEGIN".utf8))
            ? try SigningKey(pem: contents, source: path) : try SigningKey(der: contents, source: path)
        guard key.algorithm == expected else {
            throw Failure(description: "\(path) holds an \(key.algorithm.rawValue) key, not \(expected.rawValue)")
        }
        return key
    }

    private static func bytes(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else { throw Failure(description: "cannot read \(path)") }
        return Array(data)
    }
}
