/// Why a bearer token was refused. Every case answers 401; the distinction
/// is for logs, metrics and the short `message` in the response body, which
/// never quotes the token.
public enum JWTError: Error, Hashable, Sendable {
    /// Not a compact JWS with JSON header and claims, or a claim of the wrong type.
    case malformed
    /// `alg` is `none` or anything other than HS256, RS256 and ES256.
    case unsupportedAlgorithm
    /// No configured key matches the token's `kid` and `alg`.
    case unknownKey
    case badSignature
    case expired
    case missingExpiry
    case notYetValid
    case wrongIssuer
    case wrongAudience
    case missingSubject

    public var message: String {
        switch self {
        case .malformed: "token is malformed"
        case .unsupportedAlgorithm: "token algorithm is not accepted (HS256, RS256 or ES256)"
        case .unknownKey: "token key is not known for its algorithm"
        case .badSignature: "token signature is not valid"
        case .expired: "token has expired"
        case .missingExpiry: "token has no exp claim"
        case .notYetValid: "token is not valid yet (nbf)"
        case .wrongIssuer: "token issuer is not accepted"
        case .wrongAudience: "token audience is not accepted"
        case .missingSubject: "token has no string sub claim"
        }
    }
}
