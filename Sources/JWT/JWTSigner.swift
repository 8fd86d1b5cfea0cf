import Crypto
import Codecs
import JSON

/// Signs tokens, for `registryd mint-token` and for tests. Only HS256: the
/// server never holds an RSA or EC private key.
public enum JWTSigner {
    /// HS256-signs `claims` (written with sorted keys, so the same claims
    /// always give the same token). Header: `alg`, `typ: JWT`, and `kid`
    /// when given; note a `kid` makes the verifier look the key up in the
    /// JWKS (an `oct` key), not use the configured HS256 secret. Both are
    /// written by `JSONWriter`, which escapes every string.
    public static func hs256(claims: [String: JWTClaimValue], secret: [UInt8], keyId: String? = nil) -> String {
        var header: [(String, JSONWriter.Value)] = [("alg", .string("HS256")), ("typ", .string("JWT"))]
        if let keyId { header.append(("kid", .string(keyId))) }
        let payload = claims.sorted { $0.key < $1.key }.map { ($0.key, $0.value.json) }
        let signingInput = Base64URL.encode(JSONWriter.encode(.object(header))) + "."
            + Base64URL.encode(JSONWriter.encode(.object(payload)))
        let tag = HMACSHA256.tag(message: Array(signingInput.utf8), key: secret)
        return signingInput + "." + Base64URL.encode(tag)
    }
}
