import Codecs
import Testing

@Suite struct HexTests {
    @Test func encodesLowercaseTwoDigitsPerByte() {
        #expect(Hex.encode([]) == "")
        #expect(Hex.encode([0x00, 0x0F, 0xA5, 0xFF]) == "000fa5ff")
    }

    @Test func decodesEitherCase() {
        #expect(Hex.decode("") == [])
        #expect(Hex.decode("000fa5ff") == [0x00, 0x0F, 0xA5, 0xFF])
        #expect(Hex.decode("000FA5FF") == [0x00, 0x0F, 0xA5, 0xFF])
        #expect(Hex.decode(Array("aB".utf8)) == [0xAB])
    }

    @Test(arguments: ["a", "abc", "0g", "0x00", " 00", "00 ", "éé", "-1"])
    func refusesOddLengthsAndNonHexCharacters(_ text: String) {
        #expect(Hex.decode(text) == nil)
    }

    @Test func roundTripsEveryByte() {
        let bytes = (0...255).map(UInt8.init)
        #expect(Hex.decode(Hex.encode(bytes)) == bytes)
    }

    @Test func digitValuesAreTheSixteenDigitsOnly() {
        let digits = Array("0123456789abcdefABCDEF".utf8)
        for byte in 0...255 {
            let value = Hex.digitValue(UInt8(byte))
            #expect((value != nil) == digits.contains(UInt8(byte)))
        }
        #expect(Hex.digitValue(UInt8(ascii: "9")) == 9)
        #expect(Hex.digitValue(UInt8(ascii: "a")) == 10)
        #expect(Hex.digitValue(UInt8(ascii: "F")) == 15)
    }
}
