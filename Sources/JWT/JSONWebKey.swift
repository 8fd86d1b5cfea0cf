import JSON

/// One usable key of a JWKS: its `kid`, the one algorithm its type allows,
/// and the material that algorithm needs.
///
/// Tying the algorithm to the key type is what defeats algorithm confusion:
/// an RSA or EC key only ever holds a `PublicKey`, so no token can make its
/// public bytes serve as an HMAC secret.
struct JSONWebKey: Sendable {
    enum Material: Sendable {
        /// An `oct` key's secret bytes (HS256).
        case secret([UInt8])
        /// An RSA or EC public key, built once (RS256 / ES256).
        case publicKey(PublicKey)
    }

    let kid: String?
    let algorithm: JWSAlgorithm
    let material: Material

    /// Members that only a private key has; a verifier's JWKS must not carry them.
    private static let privateMembers = ["d", "p", "q", "dp", "dq", "qi", "oth"]

    /// Parses `keys[index]` of a JWKS (RFC 7517 §4, RFC 7518 §6).
    init(member value: JSONValue, index: Int) throws(JWKSError) {
        guard let members = value.objectValue else {
            throw JWKSError(message: "keys[\(index)]: not a JSON object")
        }
        var kid: String?
        if let kidValue = members["kid"] {
            guard let text = kidValue.stringValue, !text.isEmpty else {
                throw JWKSError.key(index, kid: nil, "\"kid\" must be a non-empty string")
            }
            kid = text
        }
        func fail(_ problem: String) -> JWKSError { JWKSError.key(index, kid: kid, problem) }
        func bytes(_ name: String) throws(JWKSError) -> [UInt8] {
            guard let member = members[name] else { throw fail("missing \"\(name)\"") }
            guard let text = member.stringValue, let decoded = JOSEBase64URL.decode(text), !decoded.isEmpty else {
                throw fail("\"\(name)\" must be a non-empty base64url string")
            }
            return decoded
        }

        if let use = members["use"], use.stringValue != "sig" {
            throw fail("\"use\" must be \"sig\" for a token-verification key")
        }
        guard let kty = members["kty"]?.stringValue else { throw fail("missing or non-string \"kty\"") }
        switch kty {
        case "RSA":
            algorithm = .rs256
            if let secret = Self.privateMembers.first(where: { members[$0] != nil }) {
                throw fail("private key member \"\(secret)\" must not be in the JWKS; publish the public key only")
            }
            let modulus = try bytes("n")
            let exponent = try bytes("e")
            guard let key = PublicKey.rsa(modulus: modulus, exponent: exponent) else {
                throw fail("\"n\"/\"e\" are not a valid RSA public key of at least \(PublicKey.minimumRSABits) bits")
            }
            material = .publicKey(key)
        case "EC":
            algorithm = .es256
            guard members["crv"]?.stringValue == "P-256" else { throw fail("\"crv\" must be \"P-256\" (ES256)") }
            if members["d"] != nil {
                throw fail("private key member \"d\" must not be in the JWKS; publish the public key only")
            }
            let x = try bytes("x")
            let y = try bytes("y")
            guard x.count == 32, y.count == 32 else { throw fail("\"x\" and \"y\" must each be 32 bytes for P-256") }
            guard let key = PublicKey.p256(x: x, y: y) else { throw fail("\"x\"/\"y\" are not a point on P-256") }
            material = .publicKey(key)
        case "oct":
            algorithm = .hs256
            material = .secret(try bytes("k"))
        default:
            throw fail("\"kty\" \"\(kty)\" is not supported (RSA, EC or oct)")
        }
        if let alg = members["alg"] {
            guard alg.stringValue == algorithm.rawValue else {
                throw fail("\"alg\" contradicts \"kty\" \(kty), which is only used with \(algorithm.rawValue)")
            }
        }
        self.kid = kid
    }
}
