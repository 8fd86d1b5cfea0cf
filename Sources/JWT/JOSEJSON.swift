import JSON

/// How JWT reads JSON (token headers, claim sets, JWKS): the JSON module's
/// strict parser, refusing duplicate members so two parsers can never
/// disagree about which `alg` or `exp` a token carries, and with a tighter
/// depth limit than request bodies. Any failure is `nil`: each caller has
/// its own error for it.
enum JOSEJSON {
    /// A value may sit inside at most 31 arrays or objects (32 levels of
    /// brackets), far beyond any header, claim set or JWKS.
    static let maximumDepth = 31

    static func parse(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONParser.parse(bytes, duplicateMembers: .reject, maxDepth: maximumDepth)
    }
}

extension JSONValue {
    var objectValue: JSONObject? {
        if case .object(let members) = self { return members }
        return nil
    }

    var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// A JSON number as whole seconds (RFC 7519 NumericDate): an integer
    /// that fits `Int64` exactly; any other number through `Double`, its
    /// fraction truncated toward negative infinity and values beyond `Int64`
    /// saturated. Anything that is not a finite number (a string, `true`,
    /// `null`, `1e999`) is `nil`.
    var numericDate: Int64? {
        guard case .number(let text) = self else { return nil }
        if let exact = Int64(text) { return exact }
        guard let value = Double(text), value.isFinite else { return nil }
        let floored = value.rounded(.down)
        if floored >= 9.2e18 { return .max }
        if floored <= -9.2e18 { return .min }
        return Int64(floored)
    }
}
