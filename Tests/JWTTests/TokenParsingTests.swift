import Crypto
import Codecs
import JSON
import Testing
@testable import JWT

/// The compact serialization and its JSON: the shapes refused before any
/// signature is checked.
@Suite struct TokenParsingTests {
    private let now = TokenFixtures.now

    private func verify(_ token: String) -> Result<VerifiedToken, JWTError> {
        TokenFixtures.verifier().verify(token, now: now)
    }

    private func hs256(header: String, claims: String = TokenFixtures.claims()) -> String {
        TokenFixtures.token(header: header, claims: claims) { HMACSHA256.tag(message: $0, key: TokenFixtures.secret) }
    }

    @Test func tokenNeedsExactlyThreeParts() {
        let parts = TokenFixtures.hs256Token().split(separator: ".").map(String.init)
        #expect(verify(parts[0] + "." + parts[1]) == .failure(.malformed))
        #expect(verify(parts.joined(separator: ".") + ".") == .failure(.malformed))
        #expect(verify("") == .failure(.malformed))
        #expect(verify("..") == .failure(.malformed))
    }

    @Test func paddingIsAcceptedButOtherBase64IsNot() {
        let parts = TokenFixtures.hs256Token().split(separator: ".").map(String.init)
        func padded(_ part: String) -> String { part + String(repeating: "=", count: (4 - part.count % 4) % 4) }
        #expect(verify(parts.joined(separator: ".")).map(\.subject) == .success("alice"))
        let paddedSignature = [parts[0], parts[1], padded(parts[2])].joined(separator: ".")
        #expect(paddedSignature != parts.joined(separator: "."))
        #expect(verify(paddedSignature).map(\.subject) == .success("alice"))
        let paddedPayload = [parts[0], padded(parts[1]) + "=", parts[2]].joined(separator: ".")
        #expect(verify(paddedPayload) == .failure(.malformed))
        let standardAlphabet = parts[0] + "." + parts[1] + "." + parts[2].replacing("-", with: "+").replacing("_", with: "/")
        if standardAlphabet != parts.joined(separator: ".") {
            #expect(verify(standardAlphabet) == .failure(.malformed))
        }
        #expect(verify(parts[0] + " ." + parts[1] + "." + parts[2]) == .failure(.malformed))
    }

    @Test func headerMustBeAnObjectWithAStringAlg() {
        #expect(verify(hs256(header: "[\"HS256\"]")) == .failure(.malformed))
        #expect(verify(hs256(header: "{\"typ\":\"JWT\"}")) == .failure(.malformed))
        #expect(verify(hs256(header: "{\"alg\":256}")) == .failure(.malformed))
        #expect(verify(hs256(header: "{\"alg\":\"HS256\",\"kid\":1}")) == .failure(.malformed))
        #expect(verify(hs256(header: "{\"alg\":\"HS256\",\"typ\":1}")) == .failure(.malformed))
        #expect(verify(hs256(header: "{\"alg\":\"HS256\"}")).map(\.subject) == .success("alice"))
    }

    @Test func duplicateHeaderMembersAreMalformed() {
        #expect(verify(hs256(header: "{\"alg\":\"HS256\",\"alg\":\"none\"}")) == .failure(.malformed))
    }

    @Test func criticalHeaderExtensionsAreRefused() {
        #expect(verify(hs256(header: "{\"alg\":\"HS256\",\"crit\":[\"b64\"],\"b64\":false}")) == .failure(.malformed))
    }

    @Test func payloadMustBeAJSONObject() {
        for claims in ["[]", "\"alice\"", "42", "{\"sub\":\"alice\",", "{\"sub\":\"alice\"} x", "{\"a\":1,\"a\":2}"] {
            #expect(verify(hs256(header: TokenFixtures.header(alg: "HS256"), claims: claims)) == .failure(.malformed),
                    "\(claims)")
        }
    }

    @Test func oversizedTokensAreRefusedUnread() {
        let padding = String(repeating: "x", count: CompactJWS.maximumLength)
        let claims = TokenFixtures.claims(extra: "\"pad\":\"\(padding)\"")
        #expect(verify(TokenFixtures.hs256Token(claims: claims)) == .failure(.malformed))
    }

    @Test func base64urlAllowsPaddingOnlyAndRefusesStrayBits() {
        for length in 0..<10 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 200) }
            let encoded = Base64URL.encode(bytes)
            #expect(JOSEBase64URL.decode(encoded) == bytes)
            #expect(JOSEBase64URL.decode(encoded + String(repeating: "=", count: (4 - encoded.count % 4) % 4)) == bytes)
        }
        #expect(JOSEBase64URL.decode("QQ") == [0x41])
        #expect(JOSEBase64URL.decode("QQ==") == [0x41])
        #expect(JOSEBase64URL.decode("QUI=") == [0x41, 0x42])
        #expect(JOSEBase64URL.decode("QR") == nil)
        #expect(JOSEBase64URL.decode("QR==") == nil)
        #expect(JOSEBase64URL.decode("Q") == nil)
        #expect(JOSEBase64URL.decode("Q===") == nil)
        #expect(JOSEBase64URL.decode("QQ=") == nil)
        #expect(JOSEBase64URL.decode("QQ===") == nil)
        #expect(JOSEBase64URL.decode("QUJD=") == nil)
        #expect(JOSEBase64URL.decode("=") == nil)
        #expect(JOSEBase64URL.decode("Q+8") == nil)
    }

    @Test func jsonKeepsTypesApartRefusesRepeatedMembersAndLimitsDepth() {
        #expect(JOSEJSON.parse(Array("{\"a\":[1,1.5,true,null,\"x\\ud83d\\ude00\"]}".utf8))
            == .object(JSONObject(["a": .array([.number("1"), .number("1.5"), .bool(true), .null, .string("x😀")])])))
        #expect(JOSEJSON.parse(Array("\"\\ud83d\"".utf8)) == nil)
        #expect(JOSEJSON.parse(Array("01".utf8)) == nil)
        #expect(JOSEJSON.parse(Array("[1,]".utf8)) == nil)
        #expect(JOSEJSON.parse(Array("\"a\u{01}\"".utf8)) == nil)
        #expect(JOSEJSON.parse([0x22, 0xFF, 0x22]) == nil)
        #expect(JOSEJSON.parse(Array("{\"a\":1,\"b\":{\"a\":2}}".utf8)) != nil)
        #expect(JOSEJSON.parse(Array("{\"a\":1,\"b\":2,\"a\":1}".utf8)) == nil)
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(JOSEJSON.parse(Array(deep.utf8)) == nil)
        func nested(_ levels: Int) -> [UInt8] {
            Array((String(repeating: "[", count: levels) + String(repeating: "]", count: levels)).utf8)
        }
        #expect(JOSEJSON.parse(nested(32)) != nil)
        #expect(JOSEJSON.parse(nested(33)) == nil)
    }

    @Test func numericDatesTruncateSaturateAndRefuseNonNumbers() {
        func date(_ text: String) -> Int64? { JOSEJSON.parse(Array(text.utf8))?.numericDate }
        #expect(date("1700000000") == 1_700_000_000)
        #expect(date("-0") == 0)
        #expect(date("1.9") == 1)
        #expect(date("-1.5") == -2)
        #expect(date("17e8") == 1_700_000_000)
        #expect(date("9223372036854775807") == .max)
        #expect(date("9223372036854775808") == .max)
        #expect(date("-9223372036854775809") == .min)
        #expect(date("1e999") == nil)
        #expect(date("\"1700000000\"") == nil)
        #expect(date("true") == nil)
        #expect(date("null") == nil)
    }
}
