@testable import JSON
import Testing

@Suite struct JSONWriterTests {
    private func text(_ writer: JSONWriter) -> String { String(decoding: writer.bytes, as: UTF8.self) }

    @Test func streamingPutsCommasWhereTheTreeDoes() {
        var w = JSONWriter()
        w.beginObject()
        w.member("a", "x")
        w.key("list")
        w.beginArray()
        w.int(1)
        w.beginObject()
        w.endObject()
        w.beginArray()
        w.endArray()
        w.null()
        w.endArray()
        w.member("b", nil as String?)
        w.member("c", true)
        w.member("d", nil as UInt64?)
        w.key("e")
        w.string(unescaped: { $0.append(contentsOf: Array("2026-01-01T00:00:00.000Z".utf8)) })
        w.endObject()
        let tree = JSONWriter.encode(.object([
            ("a", .string("x")), ("list", .array([.int(1), .object([]), .array([]), .null])),
            ("b", .null), ("c", .bool(true)), ("d", .null), ("e", .string("2026-01-01T00:00:00.000Z")),
        ]))
        #expect(text(w) == String(decoding: tree, as: UTF8.self))
        #expect(text(w) == #"{"a":"x","list":[1,{},[],null],"b":null,"c":true,"d":null,"e":"2026-01-01T00:00:00.000Z"}"#)
    }

    @Test(arguments: [Int64.min, -10, -9, -1, 0, 9, 10, 99, 100, 1_234_567_890, Int64.max])
    func integersAreWrittenLikeSwiftPrintsThem(_ n: Int64) {
        #expect(String(decoding: JSONWriter.encode(.int(n)), as: UTF8.self) == String(n))
        if n >= 0 {
            #expect(String(decoding: JSONWriter.encode(.uint(UInt64(n))), as: UTF8.self) == String(n))
        }
        #expect(String(decoding: JSONWriter.encode(.uint(.max)), as: UTF8.self) == String(UInt64.max))
    }

    @Test func escapesAtEveryPositionOfARun() throws {
        for text in ["\"", "ab\"", "\"ab", "a\"b", "\u{2028}", "x\u{2029}y", "\u{2020}", "€ and \u{1F600}", "\u{0}\u{1F}\u{7F}", ""] {
            let encoded = JSONWriter.encode(.string(text))
            #expect(try JSONParser.parse(encoded) == .string(text), "\(text)")
            #expect(!encoded.contains(0x7F) && !encoded.contains(where: { $0 < 0x20 }))
            #expect(!String(decoding: encoded, as: UTF8.self).contains("\u{2028}"))
        }
    }

    @Test func randomStringsRoundTripThroughTheParser() throws {
        var generator = SystemRandomNumberGenerator()
        let pieces = ["a", "Z", "0", " ", "\"", "\\", "\n", "\r", "\t", "\u{0}", "\u{1B}", "\u{7F}", "é", "€",
                      "\u{2028}", "\u{2029}", "\u{2027}", "\u{1F600}", "/"]
        for _ in 0..<2_000 {
            let text = (0..<Int.random(in: 0..<24, using: &generator))
                .map { _ in pieces.randomElement(using: &generator)! }.joined()
            var w = JSONWriter()
            w.beginObject()
            w.key(text)
            w.string(text)
            w.endObject()
            guard case .object(let object) = try JSONParser.parse(w.bytes) else {
                Issue.record("not an object: \(text)"); continue
            }
            #expect(object[text] == .string(text))
        }
    }
}

@Suite struct JSONWriterWordScanTests {
    private func needsLook(_ b: UInt8) -> Bool { b < 0x20 || b == 0x22 || b == 0x5C || b >= 0x7F }

    /// The eight-byte test never misses a byte the escaper must look at.
    @Test func wordTestNeverMissesAByteThatNeedsALook() {
        var generator = SystemRandomNumberGenerator()
        let special: [UInt8] = [0x00, 0x1F, 0x22, 0x5C, 0x7F, 0x80, 0xE2, 0xFF]
        for _ in 0..<20_000 {
            var bytes = (0..<8).map { _ in UInt8.random(in: 0x20...0x7E, using: &generator) }
            if Bool.random(using: &generator) {
                bytes[Int.random(in: 0..<8, using: &generator)] = special.randomElement(using: &generator)!
            }
            let word = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
            if bytes.contains(where: needsLook) {
                #expect(JSONWriter.mayNeedEscaping(word), "\(bytes)")
            }
        }
        let plain = Array("abcdefgh".utf8).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
        #expect(!JSONWriter.mayNeedEscaping(plain))
    }
}
