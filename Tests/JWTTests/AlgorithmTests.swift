import Crypto
import Codecs
import Testing
@testable import JWT

/// Signatures and key selection: what each algorithm accepts and what
/// algorithm confusion would need.
@Suite struct AlgorithmTests {
    @Test func hs256TokenWithConfiguredSecretVerifies() {
        let result = TokenFixtures.verifier().verify(TokenFixtures.hs256Token(), now: TokenFixtures.now)
        #expect(result == .success(VerifiedToken(subject: "alice", expiresAt: TokenFixtures.now + 3600)))
    }

    @Test func rs256TokenVerifiesByKidAndAsOnlyRSAKey() throws {
        let key = TestSigningKey(.rsa)
        let verifier = TokenFixtures.verifier(jwks: try TokenFixtures.jwks(key.jwk(kid: "rsa-1")))
        #expect(verifier.verify(TokenFixtures.token(signedBy: key, kid: "rsa-1"), now: TokenFixtures.now)
            .map(\.subject) == .success("alice"))
        #expect(verifier.verify(TokenFixtures.token(signedBy: key), now: TokenFixtures.now)
            .map(\.subject) == .success("alice"))
    }

    @Test func es256TokenVerifiesByKidAndAsOnlyECKey() throws {
        let key = TestSigningKey(.p256)
        let verifier = TokenFixtures.verifier(jwks: try TokenFixtures.jwks(key.jwk(kid: "ec-1")))
        #expect(verifier.verify(TokenFixtures.token(signedBy: key, kid: "ec-1"), now: TokenFixtures.now)
            .map(\.subject) == .success("alice"))
        #expect(verifier.verify(TokenFixtures.token(signedBy: key), now: TokenFixtures.now)
            .map(\.subject) == .success("alice"))
    }

    @Test func hs256TokenWithOctKidVerifiesWithThatKey() throws {
        let octSecret = Array("another-secret-for-the-oct-key!!".utf8)
        let jwks = try TokenFixtures.jwks("{\"kty\":\"oct\",\"kid\":\"h1\",\"k\":\"\(Base64URL.encode(octSecret))\"}")
        let verifier = TokenFixtures.verifier(secret: nil, jwks: jwks)
        #expect(verifier.verify(TokenFixtures.hs256Token(secret: octSecret, kid: "h1"), now: TokenFixtures.now)
            .map(\.subject) == .success("alice"))
        #expect(verifier.verify(TokenFixtures.hs256Token(secret: octSecret), now: TokenFixtures.now)
            == .failure(.unknownKey))
    }

    @Test func tamperedClaimsFailEachAlgorithm() throws {
        let rsa = TestSigningKey(.rsa)
        let ec = TestSigningKey(.p256)
        let verifier = TokenFixtures.verifier(jwks: try TokenFixtures.jwks(rsa.jwk(kid: "r"), ec.jwk(kid: "e")))
        let forged = Base64URL.encode(Array(TokenFixtures.claims(extra: "\"admin\":true").utf8))
        for token in [TokenFixtures.hs256Token(), TokenFixtures.token(signedBy: rsa, kid: "r"),
                      TokenFixtures.token(signedBy: ec, kid: "e")] {
            var parts = token.split(separator: ".").map(String.init)
            parts[1] = forged
            #expect(verifier.verify(parts.joined(separator: "."), now: TokenFixtures.now) == .failure(.badSignature))
        }
    }

    @Test func hs256TokenWithWrongSecretFails() {
        let token = TokenFixtures.hs256Token(secret: Array("not-the-configured-secret".utf8))
        #expect(TokenFixtures.verifier().verify(token, now: TokenFixtures.now) == .failure(.badSignature))
    }

    @Test func tokenSignedByAnotherKeyOfTheSameTypeFails() throws {
        let published = TestSigningKey(.p256)
        let attacker = TestSigningKey(.p256)
        let verifier = TokenFixtures.verifier(jwks: try TokenFixtures.jwks(published.jwk(kid: "e")))
        #expect(verifier.verify(TokenFixtures.token(signedBy: attacker, kid: "e"), now: TokenFixtures.now)
            == .failure(.badSignature))
    }

    @Test func algNoneAndOtherAlgorithmsAreUnsupported() {
        let verifier = TokenFixtures.verifier()
        let unsigned = TokenFixtures.token(header: "{\"alg\":\"none\"}", claims: TokenFixtures.claims()) { _ in [] }
        #expect(verifier.verify(unsigned, now: TokenFixtures.now) == .failure(.unsupportedAlgorithm))
        for alg in ["HS512", "RS384", "PS256", "ES256K", "hs256"] {
            let token = TokenFixtures.token(header: TokenFixtures.header(alg: alg), claims: TokenFixtures.claims()) {
                HMACSHA256.tag(message: $0, key: TokenFixtures.secret)
            }
            #expect(verifier.verify(token, now: TokenFixtures.now) == .failure(.unsupportedAlgorithm))
        }
    }

    @Test func hs256SignedWithRSAPublicKeyBytesIsRejected() throws {
        let rsa = TestSigningKey(.rsa)
        let jwk = rsa.jwk(kid: "rsa")
        let jwks = try TokenFixtures.jwks(jwk)
        for secret in [rsa.modulus, Array(jwk.utf8)] {
            let withKid = TokenFixtures.hs256Token(secret: secret, kid: "rsa")
            let withoutKid = TokenFixtures.hs256Token(secret: secret)
            let jwksOnly = TokenFixtures.verifier(secret: nil, jwks: jwks)
            #expect(jwksOnly.verify(withKid, now: TokenFixtures.now) == .failure(.unknownKey))
            #expect(jwksOnly.verify(withoutKid, now: TokenFixtures.now) == .failure(.unknownKey))
            let both = TokenFixtures.verifier(jwks: jwks)
            #expect(both.verify(withKid, now: TokenFixtures.now) == .failure(.unknownKey))
            #expect(both.verify(withoutKid, now: TokenFixtures.now) == .failure(.badSignature))
        }
    }

    @Test func rs256TokenPresentedWithECKidIsRejected() throws {
        let rsa = TestSigningKey(.rsa)
        let ec = TestSigningKey(.p256)
        let verifier = TokenFixtures.verifier(jwks: try TokenFixtures.jwks(rsa.jwk(kid: "r"), ec.jwk(kid: "e")))
        #expect(verifier.verify(TokenFixtures.token(signedBy: rsa, kid: "e"), now: TokenFixtures.now)
            == .failure(.unknownKey))
    }

    @Test func unknownKidIsRejectedEvenWithAnHS256Secret() {
        let token = TokenFixtures.hs256Token(kid: "nobody")
        #expect(TokenFixtures.verifier().verify(token, now: TokenFixtures.now) == .failure(.unknownKey))
    }

    @Test func withoutKidTwoKeysOfTheTypeAreAmbiguous() throws {
        let first = TestSigningKey(.p256)
        let second = TestSigningKey(.p256)
        let verifier = TokenFixtures.verifier(jwks: try TokenFixtures.jwks(first.jwk(kid: "a"), second.jwk(kid: "b")))
        #expect(verifier.verify(TokenFixtures.token(signedBy: first), now: TokenFixtures.now) == .failure(.unknownKey))
        #expect(verifier.verify(TokenFixtures.token(signedBy: first, kid: "a"), now: TokenFixtures.now)
            .map(\.subject) == .success("alice"))
    }

    @Test func hs256WithoutSecretOrWithEmptySecretHasNoKey() {
        let token = TokenFixtures.hs256Token()
        #expect(TokenFixtures.verifier(secret: nil).verify(token, now: TokenFixtures.now) == .failure(.unknownKey))
        let forgedWithEmptyKey = TokenFixtures.hs256Token(secret: [])
        #expect(TokenFixtures.verifier(secret: []).verify(forgedWithEmptyKey, now: TokenFixtures.now)
            == .failure(.unknownKey))
    }

    @Test func es256SignatureMustBeRawRAndSNotDER() throws {
        let key = TestSigningKey(.p256)
        let verifier = TokenFixtures.verifier(jwks: try TokenFixtures.jwks(key.jwk(kid: "e")))
        let derToken = TokenFixtures.token(header: TokenFixtures.header(alg: "ES256", kid: "e"),
                                           claims: TokenFixtures.claims(), sign: key.derSignature)
        #expect(verifier.verify(derToken, now: TokenFixtures.now) == .failure(.badSignature))
        let truncated = TokenFixtures.token(header: TokenFixtures.header(alg: "ES256", kid: "e"),
                                            claims: TokenFixtures.claims()) { Array(key.sign($0).prefix(63)) }
        #expect(verifier.verify(truncated, now: TokenFixtures.now) == .failure(.badSignature))
    }
}
