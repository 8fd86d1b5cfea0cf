import Crypto
import Codecs

/// Verifies device bearer tokens: compact JWS signed with HS256, RS256 or
/// ES256, then the registered claims.
///
/// Key selection is what prevents algorithm confusion. With a `kid`, the
/// token must name a JWKS key and use that key's one algorithm. Without
/// one, HS256 uses the configured HS256 secret and RS256/ES256 use the only
/// JWKS key of that type (none or several: `unknownKey`). An RSA or EC key
/// is never an HMAC secret.
///
/// Safe to share between threads: the keys are immutable and the cache is
/// behind a mutex.
public final class JWTVerifier: Sendable {
    private let configuration: JWTConfiguration
    private let claimCheck: ClaimCheck
    private let cache: TokenCache

    public init(configuration: JWTConfiguration) {
        self.configuration = configuration
        self.claimCheck = ClaimCheck(issuer: configuration.issuer, audience: configuration.audience,
                                     leewaySeconds: configuration.leewaySeconds)
        self.cache = TokenCache(capacity: configuration.cacheCapacity)
    }

    /// How many verified tokens are cached now (for metrics and tests).
    public var cachedTokenCount: Int { cache.count }

    /// Verifies signature and claims at `now` (seconds since epoch).
    /// Verified tokens are cached (bounded, keyed by the full token string)
    /// until their `exp` + leeway, so RS256/ES256 cost is paid once per
    /// token, not per request; the cached answer still re-checks exp/nbf
    /// against `now`.
    public func verify(_ token: String, now: Int64) -> Result<VerifiedToken, JWTError> {
        if let cached = cache.lookup(token) {
            if let failure = claimCheck.timeWindowFailure(expiresAt: cached.token.expiresAt,
                                                          notBefore: cached.notBefore, now: now) {
                if failure == .expired { cache.remove(token) }
                return .failure(failure)
            }
            return .success(cached.token)
        }
        let jws: CompactJWS
        switch CompactJWS.parse(token) {
        case .success(let parsed): jws = parsed
        case .failure(let error): return .failure(error)
        }
        if let failure = signatureFailure(jws) { return .failure(failure) }
        switch claimCheck.check(jws.claims, now: now) {
        case .failure(let error):
            return .failure(error)
        case .success(let outcome):
            let discardAfter = ClaimCheck.saturatingSum(outcome.token.expiresAt, configuration.leewaySeconds)
            cache.insert(token, TokenCache.Entry(token: outcome.token, notBefore: outcome.notBefore,
                                                 discardAfter: discardAfter), now: now)
            return .success(outcome.token)
        }
    }

    /// `nil` when the signature verifies under the key the header selects.
    private func signatureFailure(_ jws: CompactJWS) -> JWTError? {
        let material: JSONWebKey.Material
        if let kid = jws.keyId {
            guard let key = configuration.jwks?.key(withId: kid), key.algorithm == jws.algorithm else {
                return .unknownKey
            }
            material = key.material
        } else if jws.algorithm == .hs256 {
            guard let secret = configuration.hs256Secret, !secret.isEmpty else { return .unknownKey }
            material = .secret(secret)
        } else {
            guard let key = configuration.jwks?.onlyKey(for: jws.algorithm) else { return .unknownKey }
            material = key.material
        }
        let valid: Bool
        switch material {
        case .secret(let secret):
            valid = constantTimeEquals(HMACSHA256.tag(message: jws.signingInput, key: secret), jws.signature)
        case .publicKey(let key):
            valid = key.verify(message: jws.signingInput, signature: jws.signature)
        }
        return valid ? nil : .badSignature
    }
}
