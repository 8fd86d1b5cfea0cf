import JSON

/// The registered-claim rules (RFC 7519 §4.1) applied to a token whose
/// signature is already verified.
///
/// `exp` is required and numeric; `nbf` is optional and numeric; `iss` and
/// `aud` are required only when the configuration names them, but when
/// present they must be a string (`aud`: a string or an array of strings);
/// `sub` must be a string. A claim of the wrong type is `malformed`.
struct ClaimCheck {
    /// The verified claims, plus the time windows the cache re-checks.
    struct Outcome {
        var token: VerifiedToken
        var notBefore: Int64?
    }

    let issuer: String?
    let audience: String?
    let leewaySeconds: Int64

    func check(_ claims: JSONObject, now: Int64) -> Result<Outcome, JWTError> {
        guard let expiryValue = claims["exp"] else { return .failure(.missingExpiry) }
        guard let expiresAt = expiryValue.numericDate else { return .failure(.malformed) }
        var notBefore: Int64?
        if let value = claims["nbf"] {
            guard let date = value.numericDate else { return .failure(.malformed) }
            notBefore = date
        }
        if let failure = timeWindowFailure(expiresAt: expiresAt, notBefore: notBefore, now: now) {
            return .failure(failure)
        }
        var tokenIssuer: String?
        if let value = claims["iss"] {
            guard let text = value.stringValue else { return .failure(.malformed) }
            tokenIssuer = text
        }
        if let issuer, tokenIssuer != issuer { return .failure(.wrongIssuer) }
        var tokenAudience: [String] = []
        switch claims["aud"] {
        case nil: break
        case .string(let single)?: tokenAudience = [single]
        case .array(let list)?:
            for member in list {
                guard let text = member.stringValue else { return .failure(.malformed) }
                tokenAudience.append(text)
            }
        case _?: return .failure(.malformed)
        }
        if let audience, !tokenAudience.contains(audience) { return .failure(.wrongAudience) }
        guard let subject = claims["sub"]?.stringValue else { return .failure(.missingSubject) }
        let token = VerifiedToken(subject: subject, expiresAt: expiresAt, issuer: tokenIssuer, audience: tokenAudience)
        return .success(Outcome(token: token, notBefore: notBefore))
    }

    /// `expired` when now > exp + leeway, `notYetValid` when now + leeway <
    /// nbf (both sums saturate, so extreme claims cannot wrap around).
    func timeWindowFailure(expiresAt: Int64, notBefore: Int64?, now: Int64) -> JWTError? {
        if now > Self.saturatingSum(expiresAt, leewaySeconds) { return .expired }
        if let notBefore, Self.saturatingSum(now, leewaySeconds) < notBefore { return .notYetValid }
        return nil
    }

    static func saturatingSum(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        guard overflow else { return sum }
        return b > 0 ? .max : .min
    }
}
