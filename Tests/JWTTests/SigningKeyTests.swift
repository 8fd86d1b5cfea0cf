import Codecs
import Foundation
import JSON
import Testing
@testable import JWT

/// `SigningKey` and `JWTSigner.sign`: keys made by the `openssl` CLI (so
/// they were not made by the code under test), tokens checked by this
/// module's verifier against JWKs built from the CLI's view of the public
/// key.
@Suite struct SigningKeyTests {
    private let now = TokenFixtures.now

    @Test func es256TokenVerifies() throws {
        let keys = OpenSSLKeys.shared
        let key = try SigningKey(contentsOf: keys.p256)
        #expect(key.algorithm == .es256)
        let token = try #require(JWTSigner.sign(header: [("kid", .string("ec-1")), ("typ", .string("JWT"))],
                                                claims: [("sub", .string("alice")), ("exp", .int(now + 60))], key: key))
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        #expect(text(parts[0]) == #"{"alg":"ES256","kid":"ec-1","typ":"JWT"}"#)
        #expect(text(parts[1]) == #"{"sub":"alice","exp":\#(now + 60)}"#)
        #expect(Base64URL.decode(parts[2])?.count == 64)
        let verifier = TokenFixtures.verifier(secret: nil, jwks: try TokenFixtures.jwks(keys.p256JWK(kid: "ec-1")))
        #expect(verifier.verify(token, now: now) == .success(VerifiedToken(subject: "alice", expiresAt: now + 60)))
        #expect(verifier.verify(tampered(token), now: now) == .failure(.badSignature))
    }

    @Test func rs256TokenVerifies() throws {
        let keys = OpenSSLKeys.shared
        let key = try SigningKey(contentsOf: keys.rsa)
        #expect(key.algorithm == .rs256)
        let token = try #require(JWTSigner.sign(header: [("kid", .string("rsa-1"))],
                                                claims: [("sub", .string("alice")), ("exp", .int(now + 60))], key: key))
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        #expect(text(parts[0]) == #"{"alg":"RS256","kid":"rsa-1"}"#)
        #expect(Base64URL.decode(parts[2])?.count == 256)
        // RSASSA-PKCS1-v1_5 is deterministic.
        #expect(token == JWTSigner.sign(header: [("kid", .string("rsa-1"))],
                                        claims: [("sub", .string("alice")), ("exp", .int(now + 60))], key: key))
        let verifier = TokenFixtures.verifier(secret: nil, jwks: try TokenFixtures.jwks(keys.rsaJWK(kid: "rsa-1")))
        #expect(verifier.verify(token, now: now) == .success(VerifiedToken(subject: "alice", expiresAt: now + 60)))
        #expect(verifier.verify(tampered(token), now: now) == .failure(.badSignature))
    }

    @Test func traditionalPEMFormsLoadAndSign() throws {
        let keys = OpenSSLKeys.shared
        let cases: [(String, JWSAlgorithm, String)] = [
            (keys.p256SEC1, .es256, keys.p256JWK(kid: "k")),
            (keys.rsaTraditional, .rs256, keys.rsaJWK(kid: "k")),
        ]
        for (path, algorithm, jwk) in cases {
            let pem = try #require(FileManager.default.contents(atPath: path))
            #expect(String(decoding: pem, as: UTF8.self).contains(algorithm == .es256 ? "BEGIN EC PRIVATE KEY" : "BEGIN RSA PRIVATE KEY"))
            let key = try SigningKey(pem: Array(pem), source: path)
            #expect(key.algorithm == algorithm)
            let token = try #require(JWTSigner.sign(header: [("kid", .string("k"))],
                                                    claims: [("sub", .string("bob")), ("exp", .int(now + 60))], key: key))
            let verifier = TokenFixtures.verifier(secret: nil, jwks: try TokenFixtures.jwks(jwk))
            #expect(verifier.verify(token, now: now).map(\.subject) == .success("bob"))
        }
    }

    @Test func derFormsLoadAndSign() throws {
        let keys = OpenSSLKeys.shared
        let cases: [(String, JWSAlgorithm, String)] = [
            (keys.p256SEC1DER, .es256, keys.p256JWK(kid: "k")),
            (keys.p256PKCS8DER, .es256, keys.p256JWK(kid: "k")),
            (keys.rsaTraditionalDER, .rs256, keys.rsaJWK(kid: "k")),
        ]
        for (path, algorithm, jwk) in cases {
            let der = try #require(FileManager.default.contents(atPath: path))
            let key = try SigningKey(der: Array(der), source: path)
            #expect(key.algorithm == algorithm)
            let token = try #require(JWTSigner.sign(header: [("kid", .string("k"))],
                                                    claims: [("sub", .string("carol")), ("exp", .int(now + 60))], key: key))
            let verifier = TokenFixtures.verifier(secret: nil, jwks: try TokenFixtures.jwks(jwk))
            #expect(verifier.verify(token, now: now).map(\.subject) == .success("carol"))
        }
        let p384 = try #require(FileManager.default.contents(atPath: keys.p384DER))
        let curve = #expect(throws: SigningKeyError.self) { try SigningKey(der: Array(p384), source: "p384.der") }
        #expect(curve?.reason == .unsupportedCurve("secp384r1"))
        for (bytes, name) in [(keys.p256PublicDER, "public"), (Array("not a key".utf8), "garbage"), ([], "empty")] {
            let error = #expect(throws: SigningKeyError.self) { try SigningKey(der: bytes, source: name) }
            #expect(error?.reason == .noPrivateKey)
            #expect(error?.message == "\(name) holds no unencrypted DER private key (PKCS#8, or a traditional RSA or EC key)")
        }
    }

    @Test func publicJWKIsTheCLIsPublicKey() throws {
        let keys = OpenSSLKeys.shared
        let ec = String(decoding: JSONWriter.encode(try SigningKey(contentsOf: keys.p256).publicJWK(keyId: "ec-1")), as: UTF8.self)
        #expect(ec == #"{"kty":"EC","kid":"ec-1","alg":"ES256","use":"sig","crv":"P-256","x":"\#(keys.p256X)","y":"\#(keys.p256Y)"}"#)
        let rsa = String(decoding: JSONWriter.encode(try SigningKey(contentsOf: keys.rsa).publicJWK()), as: UTF8.self)
        #expect(rsa == #"{"kty":"RSA","alg":"RS256","use":"sig","n":"\#(keys.rsaModulus)","e":"AQAB"}"#)
    }

    @Test func theKeyDecidesAlg() throws {
        let key = try SigningKey(contentsOf: OpenSSLKeys.shared.p256)
        let token = try #require(JWTSigner.sign(header: [("alg", .string("HS256")), ("typ", .string("JWT"))],
                                                claims: [("sub", .string("alice"))], key: key))
        #expect(text(token.split(separator: ".")[0]) == #"{"alg":"ES256","typ":"JWT"}"#)
    }

    @Test func refusesWhatCannotSignES256OrRS256() throws {
        let keys = OpenSSLKeys.shared
        let cases: [(String, SigningKeyError.Reason, String)] = [
            (keys.p256Public, .publicKey, "holds a public key; signing needs the private key"),
            (keys.p256Encrypted, .encrypted, "holds an encrypted private key; signing needs it unencrypted"),
            (keys.rsaTraditionalEncrypted, .encrypted, "holds an encrypted private key; signing needs it unencrypted"),
            (keys.p384, .unsupportedCurve("secp384r1"), "holds an EC key on secp384r1; ES256 needs P-256"),
            (keys.rsa1024, .rsaTooSmall(bits: 1024), "holds a 1024-bit RSA key; RS256 needs at least 2048 bits"),
            (keys.ed25519, .unsupportedKeyType("ED25519"), "holds an ED25519 key; signing needs a P-256 (ES256) or RSA (RS256) key"),
        ]
        for (path, reason, message) in cases {
            let error = #expect(throws: SigningKeyError.self) { try SigningKey(contentsOf: path) }
            #expect(error?.reason == reason, "\(path)")
            #expect(error?.message == "\(path) \(message)")
        }
        for garbage in ["not a key", "", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"] {
            let error = #expect(throws: SigningKeyError.self) { try SigningKey(pem: Array(garbage.utf8), source: "the test key") }
            #expect(error?.reason == .noPrivateKey)
            #expect(error?.message == "the test key holds no PEM private key (one that begins with -----BEGIN PRIVATE KEY-----)")
        }
        let missing = #expect(throws: SigningKeyError.self) { try SigningKey(contentsOf: keys.directory + "/absent.pem") }
        #expect(missing?.reason == .unreadable)
        #expect(missing?.message.hasPrefix("cannot read the key file \(keys.directory)/absent.pem") == true)
    }

    private func text(_ part: Substring) -> String? {
        Base64URL.decode(part).map { String(decoding: $0, as: UTF8.self) }
    }

    /// `token` with one bit of its claims changed.
    private func tampered(_ token: String) -> String {
        var parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var claims = Base64URL.decode(parts[1])!
        claims[claims.count - 2] ^= 1
        parts[1] = Base64URL.encode(claims)
        return parts.joined(separator: ".")
    }
}

/// Key files made by the `openssl` CLI, once per test process, and the
/// public parameters the CLI reports for them.
struct OpenSSLKeys: Sendable {
    let directory: String
    var p256: String { directory + "/p256.p8" }
    var p256SEC1: String { directory + "/p256-sec1.pem" }
    var p256Public: String { directory + "/p256.pub.pem" }
    var p256Encrypted: String { directory + "/p256-encrypted.pem" }
    var p384: String { directory + "/p384.p8" }
    var rsa: String { directory + "/rsa.p8" }
    var rsaTraditional: String { directory + "/rsa-traditional.pem" }
    var rsaTraditionalEncrypted: String { directory + "/rsa-traditional-encrypted.pem" }
    var rsa1024: String { directory + "/rsa1024.p8" }
    var ed25519: String { directory + "/ed25519.p8" }
    var p256SEC1DER: String { directory + "/p256-sec1.der" }
    var p256PKCS8DER: String { directory + "/p256-pkcs8.der" }
    var rsaTraditionalDER: String { directory + "/rsa-traditional.der" }
    var p384DER: String { directory + "/p384.der" }
    /// base64url of the P-256 point's coordinates and of the RSA modulus.
    let p256X: String
    let p256Y: String
    let rsaModulus: String
    /// The P-256 key's SubjectPublicKeyInfo.
    let p256PublicDER: [UInt8]

    func p256JWK(kid: String) -> String {
        #"{"kty":"EC","kid":"\#(kid)","crv":"P-256","x":"\#(p256X)","y":"\#(p256Y)"}"#
    }

    /// The exponent is `openssl genpkey`'s default, 65537.
    func rsaJWK(kid: String) -> String {
        #"{"kty":"RSA","kid":"\#(kid)","n":"\#(rsaModulus)","e":"AQAB"}"#
    }

    static let shared: OpenSSLKeys = {
        let directory = NSTemporaryDirectory() + "jwt-signing-keys-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        func path(_ name: String) -> String { directory + "/" + name }
        for (name, options) in [("p256.p8", ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]),
                                ("p384.p8", ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"]),
                                ("rsa.p8", ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]),
                                ("rsa1024.p8", ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"]),
                                ("ed25519.p8", ["-algorithm", "ED25519"])] {
            openssl(["genpkey"] + options + ["-out", path(name)])
        }
        openssl(["ec", "-in", path("p256.p8"), "-out", path("p256-sec1.pem")])
        openssl(["pkey", "-in", path("p256.p8"), "-pubout", "-out", path("p256.pub.pem")])
        openssl(["pkey", "-in", path("p256.p8"), "-aes256", "-passout", "pass:secret", "-out", path("p256-encrypted.pem")])
        openssl(["rsa", "-in", path("rsa.p8"), "-traditional", "-out", path("rsa-traditional.pem")])
        openssl(["rsa", "-in", path("rsa.p8"), "-traditional", "-aes256", "-passout", "pass:secret",
                 "-out", path("rsa-traditional-encrypted.pem")])
        openssl(["ec", "-in", path("p256.p8"), "-outform", "DER", "-out", path("p256-sec1.der")])
        openssl(["pkcs8", "-topk8", "-nocrypt", "-in", path("p256.p8"), "-outform", "DER", "-out", path("p256-pkcs8.der")])
        openssl(["rsa", "-in", path("rsa.p8"), "-traditional", "-outform", "DER", "-out", path("rsa-traditional.der")])
        openssl(["ec", "-in", path("p384.p8"), "-outform", "DER", "-out", path("p384.der")])
        // A P-256 SubjectPublicKeyInfo ends with the uncompressed point 04 || x || y.
        let publicDER = openssl(["pkey", "-in", path("p256.p8"), "-pubout", "-outform", "DER"])
        let point = Array(publicDER.suffix(65))
        precondition(point.first == 0x04)
        // "Modulus=HEX\n"
        let modulusLine = String(decoding: openssl(["rsa", "-in", path("rsa.p8"), "-noout", "-modulus"]), as: UTF8.self)
        let hex = Array(modulusLine.split(separator: "=")[1].trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        let modulus = stride(from: 0, to: hex.count, by: 2).map { UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
        return OpenSSLKeys(directory: directory, p256X: Base64URL.encode(Array(point[1..<33])),
                           p256Y: Base64URL.encode(Array(point[33...])), rsaModulus: Base64URL.encode(modulus),
                           p256PublicDER: publicDER)
    }()

    /// Runs `openssl` and returns its stdout; a failure stops the tests.
    @discardableResult
    private static func openssl(_ arguments: [String]) -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try! process.run()
        let bytes = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        precondition(process.terminationStatus == 0, "openssl \(arguments.joined(separator: " ")) failed")
        return Array(bytes)
    }
}
