import JSON
import Testing

@Suite struct JSONParserTests {
    private func parse(_ text: String) throws -> JSONValue { try JSONParser.parse(Array(text.utf8)) }

    @Test func parsesNestedDocument() throws {
        let value = try parse(#" {"a": [1, -2.5e3, "x\u00e9\n", true, false, null], "b": {}} "#)
        guard case .object(let object) = value, case .array(let items)? = object["a"] else {
            Issue.record("not an object with an array"); return
        }
        #expect(items == [.number("1"), .number("-2.5e3"), .string("xé\n"), .bool(true), .bool(false), .null])
        #expect(object["b"] == .object(JSONObject()))
    }

    @Test func keepsLargestUnsignedIntegerExact() throws {
        let value = try parse(#"{"sequence": 18446744073709551615}"#)
        guard case .object(let object) = value else { Issue.record("not an object"); return }
        #expect(object["sequence"]?.exactUInt64 == UInt64.max)
        let over = try parse("18446744073709551616")
        #expect(over.exactUInt64 == nil)
        #expect(try parse("1.0").exactUInt64 == nil)
        #expect(try parse("-1").exactUInt64 == nil)
    }

    /// A string is taken straight from the body while it is plain ASCII;
    /// whatever follows a plain run (an escape, UTF-8, a control character,
    /// the end) must read as it would from the start.
    @Test func plainRunsThenAnythingElseDecodeAsAWhole() throws {
        #expect(try parse(#""device-1""#) == .string("device-1"))
        #expect(try parse(#""""#) == .string(""))
        #expect(try parse(#""abc\"def\n""#) == .string("abc\"def\n"))
        #expect(try parse("\"abc\u{E9}d\"") == .string("abc\u{E9}d"))
        #expect(try parse(#""abc\u00e9\ud83d\ude00x""#) == .string("abc\u{E9}😀x"))
        #expect(try parse(#"{"k":"v","k2":"v2"}"#) == .object(JSONObject(["k": .string("v"), "k2": .string("v2")])))
        for text in ["\"abc", "\"abc\u{1}\"", "\"abc\\", "\"abc\\q\""] {
            #expect(throws: JSONParseError.self, "\(text)") { try JSONParser.parse(Array(text.utf8)) }
        }
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0x61, 0x62, 0xFF, 0x22]) }
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0x61, 0x62, 0x7F, 0xC0, 0x22]) }
        #expect(try JSONParser.parse([0x22, 0x61, 0x7F, 0x22]) == .string("a\u{7F}"))
    }

    @Test func decodesSurrogatePairs() throws {
        #expect(try parse(#""\ud83d\ude00""#) == .string("😀"))
    }

    @Test(arguments: [
        "", "{", "{\"a\":}", "[1,]", "{\"a\":1,}", "01", "1.", "-", "tru", "\"\\x\"", "\"\\ud800\"", "\"\\udc00x\"",
        "{} x", "\"a\nb\"", "{'a':1}", "[1 2]", "nul", "+1", ".5", "1e", "{\"a\" 1}",
    ])
    func rejectsInvalidJSON(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(Array(text.utf8)) }
    }

    @Test func rejectsInvalidUTF8() {
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xE2, 0x82]] {
            #expect(throws: JSONParseError.self) { try JSONParser.parse(bytes) }
        }
    }

    @Test func rejectsDeepNestingWithoutCrashing() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(Array(deep.utf8)) }
        let ok = String(repeating: "[", count: JSONParser.maxDepth) + String(repeating: "]", count: JSONParser.maxDepth)
        #expect((try? JSONParser.parse(Array(ok.utf8))) != nil)
    }

    @Test func repeatedMemberKeepsTheLastValueByDefault() throws {
        let text = #"{"a": 1, "b": {"a": 2}, "a": 3}"#
        guard case .object(let object) = try parse(text) else { Issue.record("not an object"); return }
        #expect(object["a"] == .number("3"))
        #expect(throws: JSONParseError.self) {
            try JSONParser.parse(Array(text.utf8), duplicateMembers: .reject)
        }
        let distinct = #"{"a": 1, "b": {"a": 2}, "c": [{"a": 3}, {"a": 4}]}"#
        #expect(try JSONParser.parse(Array(distinct.utf8), duplicateMembers: .reject) == parse(distinct))
    }

    @Test func depthLimitCountsEnclosingArraysAndObjects() {
        func nested(_ levels: Int) -> [UInt8] {
            Array((String(repeating: "[", count: levels) + String(repeating: "]", count: levels)).utf8)
        }
        #expect((try? JSONParser.parse(nested(JSONParser.maxDepth + 1))) != nil)
        #expect((try? JSONParser.parse(nested(JSONParser.maxDepth + 2))) == nil)
        #expect((try? JSONParser.parse(nested(3), maxDepth: 2)) != nil)
        #expect((try? JSONParser.parse(nested(4), maxDepth: 2)) == nil)
        #expect((try? JSONParser.parse(Array(#"{"a":{"b":1}}"#.utf8), maxDepth: 2)) != nil)
        #expect((try? JSONParser.parse(Array(#"{"a":{"b":[]}}"#.utf8), maxDepth: 1)) == nil)
        #expect((try? JSONParser.parse(Array("1".utf8), maxDepth: 0)) != nil)
    }

    @Test func survivesRandomBytes() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("{}[]\",:\\u0123456789eE.-+ truefalsn\u{7F}".utf8) + [0xFF, 0xC3, 0x80, 0x00]
        for _ in 0..<5_000 {
            let length = Int.random(in: 0..<40, using: &generator)
            let bytes = (0..<length).map { _ in alphabet.randomElement(using: &generator)! }
            _ = try? JSONParser.parse(bytes)
        }
    }

    @Test func writerEscapesEverythingACallerCouldSend() throws {
        let text = "a\"b\\c\n\u{01}\u{7F}\u{2028}é"
        let encoded = String(decoding: JSONWriter.encode(.string(text)), as: UTF8.self)
        #expect(encoded == #""a\"b\\c\n\u0001\u007f\u2028é""#)
        #expect(try JSONParser.parse(Array(encoded.utf8)) == .string(text))
    }
}
