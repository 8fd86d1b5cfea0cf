/// A parsed JSON value. Numbers keep their source text so integers up to
/// 2^64−1 (`sequence`) and epoch milliseconds are read exactly, never through
/// a `Double`. A repeated member name keeps the last value or refuses the
/// document, as the parser's `DuplicateMembers` says.
public indirect enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The name of the JSON type, for error messages ("must be a string, got number").
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

/// A JSON object's members, by name.
public struct JSONObject: Sendable, Hashable {
    public private(set) var members: [String: JSONValue]

    public init(_ members: [String: JSONValue] = [:]) { self.members = members }

    public subscript(_ name: String) -> JSONValue? { members[name] }

    mutating func set(_ name: String, _ value: JSONValue) { members[name] = value }
}

extension JSONValue {
    /// The exact unsigned integer this number spells, or `nil` for a
    /// negative, fractional, exponent or out-of-range number.
    public var exactUInt64: UInt64? {
        guard case .number(let text) = self else { return nil }
        return UInt64(decimalDigits: text)
    }

    /// The exact signed integer this number spells (no fraction or exponent).
    public var exactInt64: Int64? {
        guard case .number(let text) = self else { return nil }
        return Int64(text)
    }
}

extension UInt64 {
    /// Parses decimal digits only (no sign, no fraction, no exponent, no
    /// spaces), exactly: how `sequence` and `limit` are read, in bodies and queries.
    public init?(decimalDigits text: String) {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        self.init(text)
    }
}
