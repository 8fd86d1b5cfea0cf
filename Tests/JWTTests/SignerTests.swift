import Codecs
import Testing
@testable import JWT

/// `JWTSigner.hs256`: what `registryd mint-token` prints.
@Suite struct SignerTests {
    private let now = TokenFixtures.now

    @Test func signedTokenVerifiesWithItsClaims() {
        let token = JWTSigner.hs256(claims: ["sub": .string("alice"), "exp": .int(now + 60), "iss": .string("me"),
                                             "aud": .strings(["registry", "other"])], secret: TokenFixtures.secret)
        let verifier = TokenFixtures.verifier(issuer: "me", audience: "registry")
        #expect(verifier.verify(token, now: now)
            == .success(VerifiedToken(subject: "alice", expiresAt: now + 60, issuer: "me", audience: ["registry", "other"])))
    }

    @Test func signingIsDeterministicAndUnpadded() {
        let claims: [String: JWTClaimValue] = ["sub": .string("alice"), "exp": .int(now), "iat": .int(now - 5)]
        let token = JWTSigner.hs256(claims: claims, secret: TokenFixtures.secret)
        #expect(token == JWTSigner.hs256(claims: claims, secret: TokenFixtures.secret))
        #expect(token.split(separator: ".", omittingEmptySubsequences: false).count == 3)
        #expect(!token.contains("="))
        let payload = Base64URL.decode(token.split(separator: ".")[1]).map { String(decoding: $0, as: UTF8.self) }
        #expect(payload == "{\"exp\":\(now),\"iat\":\(now - 5),\"sub\":\"alice\"}")
    }

    @Test func keyIdGoesInTheHeaderAndSelectsAnOctKey() throws {
        let secret = Array("oct-secret".utf8)
        let token = JWTSigner.hs256(claims: ["sub": .string("alice"), "exp": .int(now + 60)], secret: secret, keyId: "k1")
        let header = Base64URL.decode(token.split(separator: ".")[0]).map { String(decoding: $0, as: UTF8.self) }
        #expect(header == "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"k1\"}")
        let jwks = try TokenFixtures.jwks("{\"kid\":\"k1\",\"kty\":\"oct\",\"k\":\"\(Base64URL.encode(secret))\"}")
        #expect(TokenFixtures.verifier(secret: nil, jwks: jwks).verify(token, now: now).map(\.subject) == .success("alice"))
    }

    @Test func stringsAreEscapedSoTheyRoundTrip() {
        let subject = "quote\" backslash\\ newline\n tab\t bell\u{07} é 😀"
        let token = JWTSigner.hs256(claims: ["sub": .string(subject), "exp": .int(now + 60)], secret: TokenFixtures.secret)
        #expect(TokenFixtures.verifier().verify(token, now: now).map(\.subject) == .success(subject))
    }
}
