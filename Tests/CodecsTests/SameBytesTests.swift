import Codecs
import Testing

/// `hasSameBytes` is how ids and tokens are compared: as stored bytes.
@Suite struct SameBytesTests {
    @Test func comparesBytesNotCanonicalEquivalence() {
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        #expect(composed == decomposed)
        #expect(!composed.hasSameBytes(as: decomposed))
        #expect(composed.hasSameBytes(as: "caf\u{E9}"))
        #expect("".hasSameBytes(as: ""))
        #expect(!"".hasSameBytes(as: "a"))
        // Small (inline) and heap strings, equal and differing in the last byte.
        let token = String(repeating: "a1", count: 32)
        #expect(token.hasSameBytes(as: String(repeating: "a1", count: 32)))
        #expect(!token.hasSameBytes(as: String(repeating: "a1", count: 31) + "a2"))
        #expect(!"device-1".hasSameBytes(as: "device-2"))
        #expect(!"device-1".hasSameBytes(as: "device-10"))
    }
}
