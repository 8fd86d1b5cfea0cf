/// A claim value `JWTSigner` can write: enough for `sub`, `iss`, `exp`,
/// `iat`, `nbf` and `aud`.
public enum JWTClaimValue: Sendable, Hashable {
    case string(String)
    case int(Int64)
    case strings([String])

    /// The value as JSON text.
    var json: String {
        switch self {
        case .string(let text): Self.quoted(text)
        case .int(let number): String(number)
        case .strings(let list): "[" + list.map(Self.quoted).joined(separator: ",") + "]"
        }
    }

    /// `text` as a JSON string literal (RFC 8259 §7): quote, backslash and
    /// control characters escaped, everything else written as UTF-8.
    static func quoted(_ text: String) -> String {
        var output = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{00}"..."\u{1F}":
                let hex = String(scalar.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output + "\""
    }
}
