import Dispatch
import Synchronization
import Testing
@testable import JWT

/// One verifier shared by many threads, as the HTTP worker pool uses it.
@Suite struct ConcurrencyTests {
    @Test func sharedVerifierAnswersCorrectlyFromManyThreads() throws {
        let rsa = TestSigningKey(.rsa)
        let ec = TestSigningKey(.p256)
        let verifier = TokenFixtures.verifier(jwks: try TokenFixtures.jwks(rsa.jwk(kid: "r"), ec.jwk(kid: "e")),
                                              cacheCapacity: 16)
        let tokens = (0..<60).map { index -> (token: String, valid: Bool) in
            let claims = TokenFixtures.claims(extra: "\"n\":\(index)")
            switch index % 4 {
            case 0: return (TokenFixtures.token(signedBy: rsa, kid: "r", claims: claims), true)
            case 1: return (TokenFixtures.token(signedBy: ec, kid: "e", claims: claims), true)
            case 2: return (TokenFixtures.hs256Token(claims: claims), true)
            default: return (TokenFixtures.token(signedBy: ec, kid: "r", claims: claims), false)
            }
        }
        let wrongAnswers = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for round in 0..<3 {
                for offset in 0..<tokens.count {
                    let (token, valid) = tokens[(offset + thread * 7 + round) % tokens.count]
                    let accepted = verifier.verify(token, now: TokenFixtures.now).map(\.subject) == .success("alice")
                    if accepted != valid { wrongAnswers.add(1, ordering: .relaxed) }
                }
            }
        }
        #expect(wrongAnswers.load(ordering: .relaxed) == 0)
        #expect(verifier.cachedTokenCount <= 16)
    }
}
