import Codecs

/// Signs tokens, for `registryd mint-token` and for tests. Only HS256: the
/// server never holds an RSA or EC private key.
public enum JWTSigner {
    /// HS256-signs `claims` (written with sorted keys, so the same claims
    /// always give the same token). Header: `alg`, `typ: JWT`, and `kid`
    /// when given; note a `kid` makes the verifier look the key up in the
    /// JWKS (an `oct` key), not use the configured HS256 secret.
    public static func hs256(claims: [String: JWTClaimValue], secret: [UInt8], keyId: String? = nil) -> String {
        var header = [("alg", JWTClaimValue.quoted("HS256")), ("typ", JWTClaimValue.quoted("JWT"))]
        if let keyId { header.append(("kid", JWTClaimValue.quoted(keyId))) }
        let headerJSON = "{" + header.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
        let claimsJSON = "{" + claims.sorted { $0.key < $1.key }
            .map { JWTClaimValue.quoted($0.key) + ":" + $0.value.json }
            .joined(separator: ",") + "}"
        let signingInput = Base64URL.encode(Array(headerJSON.utf8)) + "." + Base64URL.encode(Array(claimsJSON.utf8))
        let tag = HMACSHA256.tag(message: Array(signingInput.utf8), key: secret)
        return signingInput + "." + Base64URL.encode(tag)
    }
}
