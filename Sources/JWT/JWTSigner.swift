import Crypto
import Codecs
import JSON

/// Signs tokens (JWS Compact Serialization, RFC 7515 §7.1): HS256 for
/// `registryd mint-token` and tests, and ES256 / RS256 with a `SigningKey`
/// for the tokens the server presents to others (APNs provider tokens, FCM
/// OAuth assertions) and for `registry-bench mint-jwts`. Header and claims
/// are written by `JSONWriter`, which escapes every string.
public enum JWTSigner {
    /// HS256-signs `claims` (written with sorted keys, so the same claims
    /// always give the same token). Header: `alg`, `typ: JWT`, and `kid`
    /// when given; note a `kid` makes the verifier look the key up in the
    /// JWKS (an `oct` key), not use the configured HS256 secret.
    public static func hs256(claims: [String: JWTClaimValue], secret: [UInt8], keyId: String? = nil) -> String {
        var header: [(String, JSONWriter.Value)] = [("alg", .string("HS256")), ("typ", .string("JWT"))]
        if let keyId { header.append(("kid", .string(keyId))) }
        let payload = claims.sorted { $0.key < $1.key }.map { ($0.key, $0.value.json) }
        let input = signingInput(header: header, claims: payload)
        let tag = HMACSHA256.tag(message: Array(input.utf8), key: secret)
        return input + "." + Base64URL.encode(tag)
    }

    /// Signs `claims` (members in the order given) with `key`. The header
    /// is `alg` (the key's: ES256 or RS256) followed by `header` as given,
    /// so the caller supplies `kid`, `typ` and the like; an `alg` in
    /// `header` is dropped, since the key decides it. `nil` only when
    /// OpenSSL fails to sign (out of memory).
    public static func sign(header: [(String, JSONWriter.Value)], claims: [(String, JSONWriter.Value)],
                            key: SigningKey) -> String? {
        let fullHeader = [("alg", JSONWriter.Value.string(key.algorithm.rawValue))] + header.filter { $0.0 != "alg" }
        let input = signingInput(header: fullHeader, claims: claims)
        guard let signature = key.sign(Array(input.utf8)) else { return nil }
        return input + "." + Base64URL.encode(signature)
    }

    /// `base64url(header) "." base64url(claims)`, the ASCII the signature covers.
    private static func signingInput(header: [(String, JSONWriter.Value)], claims: [(String, JSONWriter.Value)]) -> String {
        Base64URL.encode(JSONWriter.encode(.object(header))) + "." + Base64URL.encode(JSONWriter.encode(.object(claims)))
    }
}
