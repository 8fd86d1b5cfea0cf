/// The recursive-descent parser behind `JSONValue.parse`: a cursor over the
/// bytes. Every failure is a `nil`; nothing here traps on hostile input.
struct JSONParser {
    private let bytes: [UInt8]
    private var index = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    var isAtEnd: Bool { index == bytes.count }

    mutating func skipWhitespace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) {
            index += 1
        }
    }

    mutating func parseValue(depth: Int) -> JSONValue? {
        guard depth < JSONValue.maximumDepth else { return nil }
        skipWhitespace()
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "{"): return parseObject(depth: depth)
        case UInt8(ascii: "["): return parseArray(depth: depth)
        case UInt8(ascii: "\""): return parseString().map(JSONValue.string)
        case UInt8(ascii: "t"): return parseLiteral("true", .bool(true))
        case UInt8(ascii: "f"): return parseLiteral("false", .bool(false))
        case UInt8(ascii: "n"): return parseLiteral("null", .null)
        default: return parseNumber()
        }
    }

    private mutating func parseObject(depth: Int) -> JSONValue? {
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if consume(UInt8(ascii: "}")) { return .object(members) }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = parseString() else { return nil }
            skipWhitespace()
            guard consume(UInt8(ascii: ":")), let value = parseValue(depth: depth + 1) else { return nil }
            guard members.updateValue(value, forKey: key) == nil else { return nil }
            skipWhitespace()
            if consume(UInt8(ascii: "}")) { return .object(members) }
            guard consume(UInt8(ascii: ",")) else { return nil }
        }
    }

    private mutating func parseArray(depth: Int) -> JSONValue? {
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if consume(UInt8(ascii: "]")) { return .array(elements) }
        while true {
            guard let value = parseValue(depth: depth + 1) else { return nil }
            elements.append(value)
            skipWhitespace()
            if consume(UInt8(ascii: "]")) { return .array(elements) }
            guard consume(UInt8(ascii: ",")) else { return nil }
        }
    }

    /// Parses a string starting at its opening quote; escapes are decoded
    /// (surrogate pairs joined, lone surrogates refused) and the result must
    /// be valid UTF-8.
    private mutating func parseString() -> String? {
        index += 1
        var utf8: [UInt8] = []
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(validating: utf8, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { return nil }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    guard let scalar = parseUnicodeEscape() else { return nil }
                    utf8.append(contentsOf: Array(String(Character(scalar)).utf8))
                default: return nil
                }
            case 0x00..<0x20:
                return nil
            default:
                utf8.append(byte)
            }
        }
        return nil
    }

    /// The scalar of a `\uXXXX` escape (the `\u` already consumed), joining a
    /// high surrogate with the `\uXXXX` low surrogate that must follow it.
    private mutating func parseUnicodeEscape() -> Unicode.Scalar? {
        guard let first = parseHex4() else { return nil }
        switch first {
        case 0xD800..<0xDC00:
            guard consume(UInt8(ascii: "\\")), consume(UInt8(ascii: "u")),
                  let second = parseHex4(), (0xDC00..<0xE000).contains(second) else { return nil }
            return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
        case 0xDC00..<0xE000:
            return nil
        default:
            return Unicode.Scalar(first)
        }
    }

    private mutating func parseHex4() -> UInt32? {
        guard bytes.count - index >= 4 else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = Self.hexDigit(bytes[index]) else { return nil }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private static func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    /// Parses a number with RFC 8259's grammar (no leading zeros, no `+`, no
    /// bare `.`); integers that fit stay exact.
    private mutating func parseNumber() -> JSONValue? {
        let start = index
        _ = consume(UInt8(ascii: "-"))
        guard consumeDigits(allowLeadingZero: false) else { return nil }
        var isInteger = true
        if consume(UInt8(ascii: ".")) {
            isInteger = false
            guard consumeDigits(allowLeadingZero: true) else { return nil }
        }
        if consume(UInt8(ascii: "e")) || consume(UInt8(ascii: "E")) {
            isInteger = false
            if !consume(UInt8(ascii: "+")) { _ = consume(UInt8(ascii: "-")) }
            guard consumeDigits(allowLeadingZero: true) else { return nil }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let exact = Int64(text) { return .integer(exact) }
        return Double(text).map(JSONValue.number)
    }

    private mutating func consumeDigits(allowLeadingZero: Bool) -> Bool {
        let start = index
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
            index += 1
        }
        guard index > start else { return false }
        return allowLeadingZero || bytes[start] != UInt8(ascii: "0") || index - start == 1
    }

    private mutating func parseLiteral(_ literal: StaticString, _ value: JSONValue) -> JSONValue? {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { return nil }
        let matches = literal.withUTF8Buffer { expected in bytes[index..<index + count].elementsEqual(expected) }
        guard matches else { return nil }
        index += count
        return value
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }
}
