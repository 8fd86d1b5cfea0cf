import Codecs
import Testing
@testable import JWT

/// Garbage in, a failure out, never a crash: random bytes, truncations and
/// single-character mutations of valid tokens for each algorithm.
@Suite struct FuzzTests {
    /// SplitMix64, seeded, so a failure reproduces.
    private struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ {}\"".utf8)

    @Test func randomInputsAreRefused() {
        var random = SeededGenerator(state: 1)
        let verifier = TokenFixtures.verifier()
        for round in 0..<3_000 {
            let length = Int.random(in: 0..<200, using: &random)
            let bytes = (0..<length).map { _ in
                round.isMultiple(of: 2) ? UInt8.random(in: 0...255, using: &random) : Self.alphabet.randomElement(using: &random)!
            }
            let token = String(decoding: bytes, as: UTF8.self)
            #expect(!Self.accepts(verifier, token))
        }
    }

    @Test func randomJSONPartsAreRefused() {
        var random = SeededGenerator(state: 2)
        let verifier = TokenFixtures.verifier()
        let fragments = ["{", "}", "[", "]", ",", ":", "\"alg\"", "\"HS256\"", "\"exp\"", "1e999", "-0", "null", "true",
                         "\"\\u0000\"", "\"\\ud800\"", "\"sub\"", "\"kid\"", "9223372036854775808"]
        for _ in 0..<2_000 {
            func part() -> String {
                let json = (0..<Int.random(in: 0..<12, using: &random)).map { _ in fragments.randomElement(using: &random)! }
                return Base64URL.encode(Array(json.joined().utf8))
            }
            let token = part() + "." + part() + "." + part()
            #expect(!Self.accepts(verifier, token))
        }
    }

    @Test func truncationsAndMutationsOfValidTokensAreRefused() throws {
        let rsa = TestSigningKey(.rsa)
        let ec = TestSigningKey(.p256)
        let verifier = TokenFixtures.verifier(jwks: try TokenFixtures.jwks(rsa.jwk(kid: "r"), ec.jwk(kid: "e")))
        var random = SeededGenerator(state: 3)
        for valid in [TokenFixtures.hs256Token(), TokenFixtures.token(signedBy: rsa, kid: "r"),
                      TokenFixtures.token(signedBy: ec, kid: "e")] {
            #expect(verifier.verify(valid, now: TokenFixtures.now).map(\.subject) == .success("alice"))
            let characters = Array(valid.utf8)
            for length in 0..<characters.count {
                let truncated = String(decoding: characters[..<length], as: UTF8.self)
                #expect(!Self.accepts(verifier, truncated))
            }
            for _ in 0..<300 {
                var mutated = characters
                let index = Int.random(in: 0..<mutated.count, using: &random)
                var replacement = Self.alphabet.randomElement(using: &random)!
                while replacement == mutated[index] { replacement = Self.alphabet.randomElement(using: &random)! }
                mutated[index] = replacement
                let token = String(decoding: mutated, as: UTF8.self)
                #expect(!Self.accepts(verifier, token))
            }
        }
    }

    private static func accepts(_ verifier: JWTVerifier, _ token: String) -> Bool {
        if case .success = verifier.verify(token, now: TokenFixtures.now) { return true }
        return false
    }
}
