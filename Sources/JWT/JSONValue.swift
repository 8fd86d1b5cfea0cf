/// A parsed JSON value, as far as a JWT header, a claim set or a JWKS needs.
///
/// A parser of our own rather than `JSONSerialization`: it keeps integers
/// exact, tells `true` from `1` (Foundation bridges both to `NSNumber`), and
/// refuses duplicate object members, so two parsers can never disagree about
/// which `alg` or `exp` a token carries. Limits: nesting deeper than
/// `JSONValue.maximumDepth` and input that is not UTF-8 are refused.
enum JSONValue: Hashable, Sendable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    /// A number written without fraction or exponent that fits in `Int64`.
    case integer(Int64)
    /// Any other number.
    case number(Double)
    case bool(Bool)
    case null

    static let maximumDepth = 32

    /// Parses one JSON text (RFC 8259), surrounded only by whitespace.
    static func parse(_ bytes: [UInt8]) -> JSONValue? {
        var parser = JSONParser(bytes: bytes)
        guard let value = parser.parseValue(depth: 0) else { return nil }
        parser.skipWhitespace()
        return parser.isAtEnd ? value : nil
    }

    var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// A JSON number as whole seconds (RFC 7519 NumericDate): fractions are
    /// truncated toward negative infinity, values beyond `Int64` saturate, and
    /// anything that is not a number (a string, `true`, `null`) is `nil`.
    var numericDate: Int64? {
        switch self {
        case .integer(let value):
            return value
        case .number(let value):
            guard value.isFinite else { return nil }
            let floored = value.rounded(.down)
            if floored >= 9.2e18 { return .max }
            if floored <= -9.2e18 { return .min }
            return Int64(floored)
        default:
            return nil
        }
    }
}
