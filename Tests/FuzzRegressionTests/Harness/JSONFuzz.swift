@testable import JSON

/// Fuzz target `json`: the strict parser, as request bodies read it and
/// with repeated members refused (as JWT reads it).
///
/// Properties: parsing never traps (every failure is a `JSONParseError`);
/// refusing repeated members only ever refuses, never reads a document
/// differently; whatever parses, written back with `JSONWriter` and parsed
/// again, is the same document (strings, member names, nesting, integers;
/// numbers with a fraction or exponent are written as strings by
/// `normalized`, since the writer emits integers only).
enum JSONFuzz {
    static func run(_ bytes: [UInt8]) -> [String] {
        var check = FuzzCheck()
        let strict = try? JSONParser.parse(bytes, duplicateMembers: .reject)
        guard let value = try? JSONParser.parse(bytes) else {
            check.expect(strict == nil, "parses only when repeated members are refused: \(text(bytes))")
            return check.violations
        }
        if let strict {
            check.expect(strict == value, "refusing repeated members changed the document: \(text(bytes))")
        }
        let written = JSONWriter.encode(writerValue(value))
        do {
            let reparsed = try JSONParser.parse(written)
            check.expect(normalized(reparsed) == normalized(value),
                         "parse → write → parse changed the document: \(text(written))")
        } catch {
            check.expect(false, "the writer's output does not parse (\(error.message)): \(text(written))")
        }
        return check.violations
    }

    /// The document as the writer can express it.
    static func writerValue(_ value: JSONValue) -> JSONWriter.Value {
        switch value {
        case .null: .null
        case .bool(let b): .bool(b)
        case .number(let text): integer(text) ?? .string(text)
        case .string(let s): .string(s)
        case .array(let elements): .array(elements.map(writerValue))
        case .object(let object): .object(object.members.map { ($0.key, writerValue($0.value)) })
        }
    }

    /// Integers in canonical decimal; any other number as the string of its text.
    static func normalized(_ value: JSONValue) -> JSONValue {
        switch value {
        case .number(let text):
            switch integer(text) {
            case .uint(let n)?: .number(String(n))
            case .int(let n)?: .number(String(n))
            default: .string(text)
            }
        case .array(let elements): .array(elements.map(normalized))
        case .object(let object): .object(JSONObject(object.members.mapValues(normalized)))
        default: value
        }
    }

    private static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    private static func integer(_ text: String) -> JSONWriter.Value? {
        if let n = JSONValue.number(text).exactUInt64 { return .uint(n) }
        if let n = JSONValue.number(text).exactInt64 { return .int(n) }
        return nil
    }
}
