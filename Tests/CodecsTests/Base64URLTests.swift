import Codecs
import Testing

/// Strict base64url: one spelling per byte string, so a signed cursor or
/// token cannot be respelled.
@Suite struct Base64URLTests {
    @Test func roundTripsEveryLengthUnpadded() {
        for length in 0..<12 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 250) }
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(text.utf8.count == (length * 4 + 2) / 3)
            #expect(Base64URL.decode(text) == bytes)
        }
    }

    @Test func decodesTheRFC4648Vectors() {
        // RFC 4648 §10, unpadded, in the URL alphabet.
        let vectors = ["": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in vectors {
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
            #expect(Base64URL.decode(encoded) == Array(plain.utf8))
        }
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
    }

    @Test(arguments: ["Zg==", "Zm8=", "Zg=", "=", "QQ==", "Zm9v===="])
    func refusesPadding(_ text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test(arguments: ["+_8", "/w", "Zm 9", "Zm9\n", "ab+c", "Zm9\u{0}", "Zmé"])
    func refusesCharactersOutsideTheAlphabet(_ text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test(arguments: ["Q", "abcde", "Zm9vY"])
    func refusesLengthsNoEncoderProduces(_ text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    /// The last character of 1 or 2 trailing bytes has 4 or 2 unused bits;
    /// set, they would be a second spelling of the same bytes.
    @Test func refusesNonZeroStrayTrailingBits() {
        #expect(Base64URL.decode("QQ") == [0x41])
        for stray in ["QR", "QS", "QT", "QU", "Qf", "Q_"] { #expect(Base64URL.decode(stray) == nil, "\(stray)") }
        #expect(Base64URL.decode("QUI") == [0x41, 0x42])
        for stray in ["QUJ", "QUK", "QUL"] { #expect(Base64URL.decode(stray) == nil, "\(stray)") }
    }

    @Test func decodesBytesAsWellAsText() {
        #expect(Base64URL.decode(Array("Zm9v".utf8)) == Array("foo".utf8))
        #expect(Base64URL.decode(Array("xxZm9v".utf8)[2...]) == Array("foo".utf8))
        #expect(Base64URL.decode(Substring("xZm9v").dropFirst()) == Array("foo".utf8))
    }
}
