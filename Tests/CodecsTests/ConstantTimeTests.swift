import Codecs
import Testing

/// `constantTimeEquals` is what the internal API key, HMAC tags and cursor
/// MACs are compared with.
@Suite struct ConstantTimeTests {
    @Test func comparesContentAndLength() {
        #expect(constantTimeEquals([], []))
        #expect(constantTimeEquals(Array("api-key".utf8), Array("api-key".utf8)))
        #expect(!constantTimeEquals(Array("api-key".utf8), Array("api-kez".utf8)))
        #expect(!constantTimeEquals(Array("api-key".utf8), Array("api-key2".utf8)))
        #expect(!constantTimeEquals(Array("api".utf8), []))
        #expect(!constantTimeEquals([0], []))
        #expect(!constantTimeEquals([1, 2, 3], [3, 2, 1]))
    }
}
