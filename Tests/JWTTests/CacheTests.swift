import Testing
@testable import JWT

/// The verified-token cache: hits answer like a fresh verification, time
/// windows are still enforced, and the size stays bounded.
@Suite struct CacheTests {
    private let now = TokenFixtures.now

    @Test func cacheHitReturnsTheSameAnswer() throws {
        let key = TestSigningKey(.p256)
        let verifier = TokenFixtures.verifier(jwks: try TokenFixtures.jwks(key.jwk(kid: "e")))
        let token = TokenFixtures.token(signedBy: key, kid: "e")
        let first = verifier.verify(token, now: now)
        #expect(verifier.cachedTokenCount == 1)
        #expect(verifier.verify(token, now: now + 5) == first)
        #expect(first.map(\.subject) == .success("alice"))
        #expect(verifier.cachedTokenCount == 1)
    }

    @Test func cachedTokenIsRejectedOnceExpiredAndDropped() {
        let verifier = TokenFixtures.verifier()
        let token = TokenFixtures.hs256Token(claims: TokenFixtures.claims(exp: now + 10))
        #expect(verifier.verify(token, now: now).map(\.subject) == .success("alice"))
        #expect(verifier.verify(token, now: now + 70).map(\.subject) == .success("alice"))
        #expect(verifier.verify(token, now: now + 71) == .failure(.expired))
        #expect(verifier.cachedTokenCount == 0)
    }

    @Test func cachedTokenStillHonoursNotBefore() {
        let verifier = TokenFixtures.verifier()
        let token = TokenFixtures.hs256Token(claims: TokenFixtures.claims(extra: "\"nbf\":\(now + 30)"))
        #expect(verifier.verify(token, now: now).map(\.subject) == .success("alice"))
        #expect(verifier.verify(token, now: now - 100) == .failure(.notYetValid))
        #expect(verifier.cachedTokenCount == 1)
    }

    @Test func failuresAreNotCached() {
        let verifier = TokenFixtures.verifier()
        _ = verifier.verify(TokenFixtures.hs256Token(secret: Array("wrong".utf8)), now: now)
        _ = verifier.verify(TokenFixtures.hs256Token(claims: TokenFixtures.claims(exp: now - 3600)), now: now)
        #expect(verifier.cachedTokenCount == 0)
    }

    @Test func cacheStaysWithinItsCapacity() {
        let verifier = TokenFixtures.verifier(cacheCapacity: 8)
        var tokens: [String] = []
        for index in 0..<50 {
            let token = TokenFixtures.hs256Token(claims: TokenFixtures.claims(extra: "\"n\":\(index)"))
            tokens.append(token)
            #expect(verifier.verify(token, now: now).map(\.subject) == .success("alice"))
            #expect(verifier.cachedTokenCount <= 8)
        }
        #expect(verifier.cachedTokenCount >= 1)
        #expect(tokens.allSatisfy { verifier.verify($0, now: now).map(\.subject) == .success("alice") })
    }

    @Test func fullCacheDropsExpiredEntriesFirst() {
        let cache = TokenCache(capacity: 4)
        let token = VerifiedToken(subject: "alice", expiresAt: now)
        for index in 0..<3 {
            cache.insert("old-\(index)", .init(token: token, notBefore: nil, discardAfter: now + 60), now: now)
        }
        cache.insert("live", .init(token: token, notBefore: nil, discardAfter: now + 10_000), now: now)
        cache.insert("new", .init(token: token, notBefore: nil, discardAfter: now + 10_000), now: now + 100)
        #expect(cache.count == 2)
        #expect(cache.lookup("live") != nil)
        #expect(cache.lookup("new") != nil)
    }

    @Test func zeroCapacityDisablesTheCache() {
        let verifier = TokenFixtures.verifier(cacheCapacity: 0)
        #expect(verifier.verify(TokenFixtures.hs256Token(), now: now).map(\.subject) == .success("alice"))
        #expect(verifier.cachedTokenCount == 0)
    }
}
