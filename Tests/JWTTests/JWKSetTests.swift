import Codecs
import Testing
@testable import JWT

/// JWKS parsing: what is accepted, and that every refusal names the key
/// and the member an operator has to fix.
@Suite struct JWKSetTests {
    private func error(_ json: String) -> JWKSError? {
        do {
            _ = try JWKSet(json: Array(json.utf8))
            return nil
        } catch {
            return error
        }
    }

    private func keyError(_ jwk: String) -> String? {
        error("{\"keys\":[" + jwk + "]}")?.message
    }

    @Test func parsesRSAECAndOctKeysWithMatchingAlg() throws {
        let rsa = TestSigningKey(.rsa)
        let ec = TestSigningKey(.p256)
        let set = try TokenFixtures.jwks(rsa.jwk(kid: "r", extra: "\"alg\":\"RS256\",\"use\":\"sig\""),
                                         ec.jwk(kid: "e", extra: "\"alg\":\"ES256\""),
                                         "{\"kty\":\"oct\",\"k\":\"c2VjcmV0\",\"alg\":\"HS256\"}")
        #expect(set.count == 3)
        #expect(set.key(withId: "r")?.algorithm == .rs256)
        #expect(set.key(withId: "e")?.algorithm == .es256)
        #expect(set.onlyKey(for: .hs256)?.kid == nil)
    }

    @Test func algContradictingKeyTypeIsAConfigurationError() {
        let rsa = TestSigningKey(.rsa)
        let message = keyError(rsa.jwk(kid: "r", extra: "\"alg\":\"HS256\""))
        #expect(message?.contains("keys[0] (kid \"r\")") == true)
        #expect(message?.contains("\"alg\"") == true)
        #expect(keyError("{\"kty\":\"oct\",\"k\":\"c2VjcmV0\",\"alg\":\"RS256\"}")?.contains("\"alg\"") == true)
    }

    @Test func missingOrBadMembersAreNamed() {
        #expect(keyError("{\"kid\":\"x\",\"kty\":\"RSA\",\"e\":\"AQAB\"}") == "keys[0] (kid \"x\"): missing \"n\"")
        #expect(keyError("{\"kty\":\"oct\",\"k\":\"not base64!\"}")?.hasPrefix("keys[0]: \"k\"") == true)
        #expect(keyError("{\"kty\":\"oct\",\"k\":\"\"}")?.contains("\"k\"") == true)
        #expect(keyError("{\"k\":\"c2VjcmV0\"}")?.contains("\"kty\"") == true)
        #expect(keyError("{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"AA\"}")?.contains("\"kty\"") == true)
        #expect(keyError("{\"kid\":7,\"kty\":\"oct\",\"k\":\"c2VjcmV0\"}")?.contains("\"kid\"") == true)
        #expect(keyError("[1]")?.hasPrefix("keys[0]") == true)
    }

    @Test func secondKeyIsNamedByItsIndex() {
        let message = error("{\"keys\":[{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"},{\"kid\":\"b\",\"kty\":\"oct\"}]}")?.message
        #expect(message == "keys[1] (kid \"b\"): missing \"k\"")
    }

    @Test func onlyP256CurvesAreAccepted() {
        let ec = TestSigningKey(.p256)
        let p384 = ec.jwk(kid: "e").replacing("P-256", with: "P-384")
        #expect(keyError(p384)?.contains("\"crv\"") == true)
    }

    @Test func pointOffTheCurveIsRefused() {
        let x = Base64URL.encode([UInt8](repeating: 1, count: 32))
        let y = Base64URL.encode([UInt8](repeating: 2, count: 32))
        let message = keyError("{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"\(x)\",\"y\":\"\(y)\"}")
        #expect(message?.contains("not a point on P-256") == true)
        let short = Base64URL.encode([UInt8](repeating: 1, count: 31))
        #expect(keyError("{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"\(short)\",\"y\":\"\(y)\"}")?.contains("32 bytes") == true)
    }

    @Test func rsaKeysUnder2048BitsAreRefused() {
        let small = TestSigningKey(.rsa, rsaBits: 1024)
        #expect(keyError(small.jwk(kid: "small"))?.contains("at least 2048 bits") == true)
    }

    @Test func privateKeyMembersAreRefused() {
        let rsa = TestSigningKey(.rsa)
        #expect(keyError(rsa.jwk(kid: "r", extra: "\"d\":\"AQAB\""))?.contains("private key member \"d\"") == true)
        let ec = TestSigningKey(.p256)
        #expect(keyError(ec.jwk(kid: "e", extra: "\"d\":\"AQAB\""))?.contains("private key member \"d\"") == true)
    }

    @Test func encryptionKeysAreSkippedAndOtherUsesRefused() throws {
        let encryption = "{\"kty\":\"RSA\",\"use\":\"enc\",\"alg\":\"RSA-OAEP\",\"n\":\"AQAB\",\"e\":\"AQAB\"}"
        let set = try JWKSet(json: Array(("{\"keys\":[" + encryption + ",{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"}]}").utf8))
        #expect(set.count == 1)
        #expect(keyError(encryption)?.contains("no signing key") == true)
        #expect(keyError("{\"kty\":\"oct\",\"k\":\"c2VjcmV0\",\"use\":\"wrap\"}")?.contains("\"use\"") == true)
    }

    @Test func duplicateKidsAreRefused() {
        let message = error("{\"keys\":[{\"kid\":\"a\",\"kty\":\"oct\",\"k\":\"c2VjcmV0\"},"
                            + "{\"kid\":\"a\",\"kty\":\"oct\",\"k\":\"b3RoZXI\"}]}")?.message
        #expect(message?.hasPrefix("keys[1] (kid \"a\")") == true)
    }

    @Test func documentMustBeAnObjectWithANonEmptyKeysArray() {
        #expect(error("not json")?.message == "JWKS is not a JSON object")
        #expect(error("[]")?.message == "JWKS is not a JSON object")
        #expect(error("{\"keys\":{}}")?.message.contains("\"keys\"") == true)
        #expect(error("{\"keys\":[]}")?.message.contains("empty") == true)
    }

    @Test func errorDescriptionIsItsMessage() {
        let failure = JWKSError(message: "keys[0]: missing \"k\"")
        #expect("\(failure)" == "keys[0]: missing \"k\"")
    }
}
