import Testing
@testable import JWT

/// `exp`, `nbf`, `iss`, `aud` and `sub` rules, all with HS256 tokens (the
/// claim checks do not depend on the algorithm).
@Suite struct ClaimTests {
    private let now = TokenFixtures.now

    private func verify(_ claims: String, issuer: String? = nil, audience: String? = nil) -> Result<VerifiedToken, JWTError> {
        TokenFixtures.verifier(issuer: issuer, audience: audience)
            .verify(TokenFixtures.hs256Token(claims: claims), now: now)
    }

    @Test func expiryBeyondLeewayIsExpiredAndWithinLeewayIsAccepted() {
        #expect(verify(TokenFixtures.claims(exp: now - 61)) == .failure(.expired))
        #expect(verify(TokenFixtures.claims(exp: now - 60)).map(\.expiresAt) == .success(now - 60))
        #expect(verify(TokenFixtures.claims(exp: now - 1)).map(\.subject) == .success("alice"))
    }

    @Test func leewayIsConfigurable() {
        var configuration = JWTConfiguration(hs256Secret: TokenFixtures.secret)
        configuration.leewaySeconds = 0
        let verifier = JWTVerifier(configuration: configuration)
        #expect(verifier.verify(TokenFixtures.hs256Token(claims: TokenFixtures.claims(exp: now - 1)), now: now)
            == .failure(.expired))
        #expect(verifier.verify(TokenFixtures.hs256Token(claims: TokenFixtures.claims(exp: now)), now: now)
            .map(\.subject) == .success("alice"))
    }

    @Test func missingExpiryIsRefused() {
        #expect(verify(TokenFixtures.claims(exp: nil)) == .failure(.missingExpiry))
    }

    @Test func nonNumericTimeClaimsAreMalformed() {
        for claims in ["{\"sub\":\"alice\",\"exp\":\"\(now + 60)\"}", "{\"sub\":\"alice\",\"exp\":true}",
                       "{\"sub\":\"alice\",\"exp\":null}", "{\"sub\":\"alice\",\"exp\":[1]}",
                       TokenFixtures.claims(extra: "\"nbf\":\"0\"")] {
            #expect(verify(claims) == .failure(.malformed), "\(claims)")
        }
    }

    @Test func fractionalAndHugeExpiryAreNumericDates() {
        #expect(verify("{\"sub\":\"alice\",\"exp\":\(now + 10).75}").map(\.expiresAt) == .success(now + 10))
        #expect(verify("{\"sub\":\"alice\",\"exp\":1e300}").map(\.expiresAt) == .success(.max))
        #expect(verify("{\"sub\":\"alice\",\"exp\":9223372036854775807}").map(\.subject) == .success("alice"))
    }

    @Test func notBeforeInTheFutureBeyondLeewayIsRefused() {
        #expect(verify(TokenFixtures.claims(extra: "\"nbf\":\(now + 61)")) == .failure(.notYetValid))
        #expect(verify(TokenFixtures.claims(extra: "\"nbf\":\(now + 60)")).map(\.subject) == .success("alice"))
        #expect(verify(TokenFixtures.claims(extra: "\"nbf\":\(now - 3600)")).map(\.subject) == .success("alice"))
    }

    @Test func issuerIsCheckedOnlyWhenConfigured() {
        let issued = TokenFixtures.claims(extra: "\"iss\":\"https://id.example\"")
        #expect(verify(issued, issuer: "https://id.example").map(\.issuer) == .success("https://id.example"))
        #expect(verify(issued, issuer: "https://other.example") == .failure(.wrongIssuer))
        #expect(verify(TokenFixtures.claims(), issuer: "https://id.example") == .failure(.wrongIssuer))
        #expect(verify(issued).map(\.issuer) == .success("https://id.example"))
        #expect(verify(TokenFixtures.claims()).map(\.issuer) == .success(nil))
    }

    @Test func audienceMayBeAStringOrAListContainingTheConfiguredOne() {
        let single = TokenFixtures.claims(extra: "\"aud\":\"registry\"")
        let list = TokenFixtures.claims(extra: "\"aud\":[\"other\",\"registry\"]")
        #expect(verify(single, audience: "registry").map(\.audience) == .success(["registry"]))
        #expect(verify(list, audience: "registry").map(\.audience) == .success(["other", "registry"]))
        #expect(verify(TokenFixtures.claims(extra: "\"aud\":[\"other\"]"), audience: "registry")
            == .failure(.wrongAudience))
        #expect(verify(TokenFixtures.claims(extra: "\"aud\":[]"), audience: "registry") == .failure(.wrongAudience))
        #expect(verify(TokenFixtures.claims(), audience: "registry") == .failure(.wrongAudience))
        #expect(verify(list).map(\.audience) == .success(["other", "registry"]))
    }

    @Test func wronglyTypedIssuerOrAudienceIsMalformed() {
        #expect(verify(TokenFixtures.claims(extra: "\"iss\":7")) == .failure(.malformed))
        #expect(verify(TokenFixtures.claims(extra: "\"aud\":[\"registry\",1]"), audience: "registry")
            == .failure(.malformed))
        #expect(verify(TokenFixtures.claims(extra: "\"aud\":{}")) == .failure(.malformed))
    }

    @Test func subjectMustBeAString() {
        #expect(verify("{\"exp\":\(now + 60)}") == .failure(.missingSubject))
        #expect(verify("{\"sub\":42,\"exp\":\(now + 60)}") == .failure(.missingSubject))
        #expect(verify("{\"sub\":\"bob \\\"b\\\" \\u00e9\",\"exp\":\(now + 60)}").map(\.subject)
            == .success("bob \"b\" é"))
    }

    @Test func everyErrorHasAShortDistinctMessage() {
        let errors: [JWTError] = [.malformed, .unsupportedAlgorithm, .unknownKey, .badSignature, .expired,
                                  .missingExpiry, .notYetValid, .wrongIssuer, .wrongAudience, .missingSubject]
        #expect(Set(errors.map(\.message)).count == errors.count)
        #expect(errors.allSatisfy { !$0.message.isEmpty && $0.message.count < 80 })
    }
}
