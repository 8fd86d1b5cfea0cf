/// What `JWTVerifier` accepts: its keys and the claims it insists on.
///
/// Only the executable fills this in from flags and files; the module reads
/// nothing itself.
public struct JWTConfiguration: Sendable {
    /// The HS256 secret for tokens without `kid`: the secret file's bytes,
    /// one trailing newline already removed by the caller, not decoded.
    /// An empty secret counts as none, so it can never verify a token.
    public var hs256Secret: [UInt8]?
    /// RS256 / ES256 (and HS256 `oct`) keys, selected by `kid`.
    public var jwks: JWKSet?
    /// When set, `iss` must equal it.
    public var issuer: String?
    /// When set, `aud` (a string or an array of strings) must contain it.
    public var audience: String?
    /// Clock skew tolerated on `exp` and `nbf`, in seconds.
    public var leewaySeconds: Int64 = 60
    /// How many verified tokens `JWTVerifier` remembers.
    public var cacheCapacity: Int = 10_000

    public init(hs256Secret: [UInt8]? = nil, jwks: JWKSet? = nil, issuer: String? = nil, audience: String? = nil) {
        self.hs256Secret = hs256Secret
        self.jwks = jwks
        self.issuer = issuer
        self.audience = audience
    }
}
