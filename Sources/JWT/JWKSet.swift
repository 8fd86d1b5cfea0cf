import JSON

/// The keys of a JWKS file (RFC 7517 §5), parsed and checked once at
/// startup: each key's OpenSSL object is built here and reused for every
/// verification.
///
/// Limits: RSA (RS256, moduli of 2048 bits or more), EC on P-256 (ES256) and
/// `oct` (HS256) keys only; every signing key must be usable (an unusable one
/// is a configuration error, not skipped); `kid`s must be unique; at least one
/// signing key. Keys marked `"use": "enc"` are skipped: identity providers
/// publish encryption keys beside signing keys in one set, and such a key
/// can never verify a token.
public struct JWKSet: Sendable {
    let keys: [JSONWebKey]

    /// Parses RFC 7517 JSON (`{"keys":[…]}`). Each key's type fixes its
    /// algorithm (RSA → RS256, EC P-256 → ES256, oct → HS256); an `alg`
    /// member that contradicts it is a configuration error. Throws
    /// `JWKSError` with a message naming the key (index/kid) and member.
    public init(json: [UInt8]) throws(JWKSError) {
        guard let document = JOSEJSON.parse(json)?.objectValue else {
            throw JWKSError(message: "JWKS is not a JSON object")
        }
        guard case .array(let entries)? = document["keys"] else {
            throw JWKSError(message: "JWKS member \"keys\" is missing or not an array")
        }
        guard !entries.isEmpty else { throw JWKSError(message: "JWKS member \"keys\" is empty") }
        var keys: [JSONWebKey] = []
        var seen: Set<String> = []
        for (index, entry) in entries.enumerated() {
            if case .string("enc")? = entry.objectValue?["use"] { continue }
            let key = try JSONWebKey(member: entry, index: index)
            if let kid = key.kid, !seen.insert(kid).inserted {
                throw JWKSError.key(index, kid: kid, "\"kid\" repeats an earlier key's")
            }
            keys.append(key)
        }
        guard !keys.isEmpty else { throw JWKSError(message: "JWKS holds no signing key (every key is \"use\": \"enc\")") }
        self.keys = keys
    }

    public var count: Int { keys.count }

    /// The key named `kid`, whatever its algorithm.
    func key(withId kid: String) -> JSONWebKey? {
        keys.first { $0.kid == kid }
    }

    /// The only key for `algorithm`, or `nil` when there are none or several
    /// (a token without `kid` must not make us guess).
    func onlyKey(for algorithm: JWSAlgorithm) -> JSONWebKey? {
        let candidates = keys.filter { $0.algorithm == algorithm }
        return candidates.count == 1 ? candidates[0] : nil
    }
}
