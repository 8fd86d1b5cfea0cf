/// A strict RFC 8259 parser: request bodies, export lines, and JWT's
/// headers, claim sets and JWKS.
///
/// Why not `JSONSerialization`: it reads numbers through `Double` (so
/// `sequence` 2^64−1 would round), bridges `true` and `1` to one `NSNumber`,
/// and its depth and error behaviour differ across Foundation versions. This
/// parser bounds nesting depth, rejects invalid UTF-8, lone surrogates and
/// trailing garbage, and never traps on input: every failure is a
/// `JSONParseError`.
public struct JSONParser {
    /// The default depth limit; no request of the API nests beyond 3.
    public static let maxDepth = 32

    /// What a document whose object repeats a member name means.
    public enum DuplicateMembers: Sendable {
        /// The last value wins, as most parsers do: how request bodies and
        /// export lines are read.
        case keepLast
        /// The document is refused: for security decisions such as a JWT's
        /// `alg` or `exp`, where two parsers picking different values of one
        /// member would let a token mean one thing here and another elsewhere.
        case reject
    }

    private let bytes: [UInt8]
    private let duplicateMembers: DuplicateMembers
    private let depthLimit: Int
    private var index = 0

    /// Parses a complete document. The top-level value is at depth 0 and
    /// each enclosing array or object adds one; a value deeper than
    /// `maxDepth` is refused (so `maxDepth + 1` nested arrays still parse).
    public static func parse(_ bytes: [UInt8], duplicateMembers: DuplicateMembers = .keepLast,
                             maxDepth: Int = JSONParser.maxDepth) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: bytes, duplicateMembers: duplicateMembers, depthLimit: maxDepth)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected data after the JSON value") }
        return value
    }

    private init(bytes: [UInt8], duplicateMembers: DuplicateMembers, depthLimit: Int) {
        self.bytes = bytes
        self.duplicateMembers = duplicateMembers
        self.depthLimit = depthLimit
    }

    private func error(_ message: String) -> JSONParseError {
        JSONParseError(message: "\(message) at byte \(index)")
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= depthLimit else { throw error("nesting deeper than \(depthLimit)") }
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected character")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let matches = literal.withUTF8Buffer { text in
            bytes.count - index >= text.count && text.indices.allSatisfy { bytes[index + $0] == text[$0] }
        }
        guard matches else { throw error("invalid literal") }
        index += literal.utf8CodeUnitCount
    }

    private mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        index += 1
        var object = JSONObject()
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(object) }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let name = try parseString()
            if duplicateMembers == .reject, object[name] != nil { throw error("repeated member name") }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipWhitespace()
            object.set(name, try parseValue(depth: depth + 1))
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(object) }
            throw error("expected ',' or '}'")
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
            throw error("expected ',' or ']'")
        }
    }

    private mutating func parseNumber() throws(JSONParseError) -> String {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    private mutating func parseString() throws(JSONParseError) -> String {
        index += 1
        // Most strings (ids, versions, tokens) are printable ASCII with no
        // escape: those become a string straight from the body's bytes.
        // Otherwise the plain run so far is copied and the rest decoded.
        let start = index
        while index < bytes.count, bytes[index] >= 0x20, bytes[index] < 0x80,
              bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\") {
            index += 1
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
            index += 1
            return String(decoding: bytes[start..<index - 1], as: UTF8.self)
        }
        var out = Array(bytes[start..<index])
        while true {
            guard index < bytes.count else { throw error("unterminated string") }
            let b = bytes[index]
            switch b {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                try parseEscape(into: &out)
            case 0x00..<0x20:
                throw error("unescaped control character in string")
            case 0x80...:
                try copyUTF8Sequence(into: &out)
            default:
                out.append(b)
                index += 1
            }
        }
    }

    private mutating func parseEscape(into out: inout [UInt8]) throws(JSONParseError) {
        guard index < bytes.count else { throw error("unterminated escape") }
        let c = bytes[index]
        index += 1
        switch c {
        case UInt8(ascii: "\""): out.append(0x22)
        case UInt8(ascii: "\\"): out.append(0x5C)
        case UInt8(ascii: "/"): out.append(0x2F)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw error("lone surrogate in string")
                }
                index += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw error("lone surrogate in string") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw error("lone surrogate in string")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid escape") }
            out.append(contentsOf: Array(String(Character(unicode)).utf8))
        default:
            throw error("invalid escape")
        }
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw error("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[index]
            let digit: UInt32
            switch b {
            case 0x30...0x39: digit = UInt32(b - 0x30)
            case 0x41...0x46: digit = UInt32(b - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(b - 0x61 + 10)
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    /// Copies one multi-byte UTF-8 sequence, rejecting overlong forms,
    /// surrogates and code points past U+10FFFF.
    private mutating func copyUTF8Sequence(into out: inout [UInt8]) throws(JSONParseError) {
        let lead = bytes[index]
        let length: Int
        let minimum: UInt32
        var scalar: UInt32
        switch lead {
        case 0xC2...0xDF: length = 2; minimum = 0x80; scalar = UInt32(lead & 0x1F)
        case 0xE0...0xEF: length = 3; minimum = 0x800; scalar = UInt32(lead & 0x0F)
        case 0xF0...0xF4: length = 4; minimum = 0x10000; scalar = UInt32(lead & 0x07)
        default: throw error("invalid UTF-8")
        }
        guard bytes.count - index >= length else { throw error("invalid UTF-8") }
        for offset in 1..<length {
            let b = bytes[index + offset]
            guard b & 0xC0 == 0x80 else { throw error("invalid UTF-8") }
            scalar = scalar << 6 | UInt32(b & 0x3F)
        }
        guard scalar >= minimum, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else {
            throw error("invalid UTF-8")
        }
        out.append(contentsOf: bytes[index..<index + length])
        index += length
    }
}

/// Why a body is not JSON; the message says where.
public struct JSONParseError: Error, Hashable, Sendable {
    public var message: String
}
