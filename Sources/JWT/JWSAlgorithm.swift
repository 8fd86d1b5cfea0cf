/// The signature algorithms this module accepts. Anything else, `none`
/// included, is refused before any key is looked at. Public as the
/// algorithm of a `SigningKey` (ES256 or RS256).
public enum JWSAlgorithm: String, Hashable, Sendable {
    case hs256 = "HS256"
    case rs256 = "RS256"
    case es256 = "ES256"
}
