import Crypto
import Codecs
@testable import JWT

/// Small builders for tokens and configurations; every test makes its own.
enum TokenFixtures {
    static let now: Int64 = 1_700_000_000
    static let secret = Array("test-hs256-secret-0123456789abcdef".utf8)

    /// A claim set valid at `now`, for user `alice`, as JSON text, with
    /// `extra` members appended verbatim.
    static func claims(exp: Int64? = now + 3600, extra: String = "") -> String {
        var members = ["\"sub\":\"alice\""]
        if let exp { members.append("\"exp\":\(exp)") }
        if !extra.isEmpty { members.append(extra) }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// `base64url(header).base64url(claims).base64url(sign(signing input))`.
    static func token(header: String, claims: String, sign: ([UInt8]) -> [UInt8]) -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        return input + "." + Base64URL.encode(sign(Array(input.utf8)))
    }

    static func header(alg: String, kid: String? = nil) -> String {
        kid.map { "{\"alg\":\"\(alg)\",\"typ\":\"JWT\",\"kid\":\"\($0)\"}" } ?? "{\"alg\":\"\(alg)\",\"typ\":\"JWT\"}"
    }

    static func hs256Token(claims: String = claims(), secret: [UInt8] = secret, kid: String? = nil) -> String {
        token(header: header(alg: "HS256", kid: kid), claims: claims) { HMACSHA256.tag(message: $0, key: secret) }
    }

    static func token(signedBy key: TestSigningKey, kid: String? = nil, claims: String = claims()) -> String {
        token(header: header(alg: key.algorithm, kid: kid), claims: claims, sign: key.sign)
    }

    /// A JWKS document holding the given JWK objects.
    static func jwks(_ keys: String...) throws -> JWKSet {
        try JWKSet(json: Array(("{\"keys\":[" + keys.joined(separator: ",") + "]}").utf8))
    }

    static func verifier(secret: [UInt8]? = secret, jwks: JWKSet? = nil, issuer: String? = nil,
                         audience: String? = nil, cacheCapacity: Int = 10_000) -> JWTVerifier {
        var configuration = JWTConfiguration(hs256Secret: secret, jwks: jwks, issuer: issuer, audience: audience)
        configuration.cacheCapacity = cacheCapacity
        return JWTVerifier(configuration: configuration)
    }
}
