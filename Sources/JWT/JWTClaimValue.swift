import JSON

/// A claim value `JWTSigner` can write: enough for `sub`, `iss`, `exp`,
/// `iat`, `nbf` and `aud`.
public enum JWTClaimValue: Sendable, Hashable {
    case string(String)
    case int(Int64)
    case strings([String])

    /// The value as `JSONWriter` writes it.
    var json: JSONWriter.Value {
        switch self {
        case .string(let text): .string(text)
        case .int(let number): .int(number)
        case .strings(let list): .array(list.map(JSONWriter.Value.string))
        }
    }
}
