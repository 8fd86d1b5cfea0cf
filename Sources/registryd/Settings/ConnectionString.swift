import Foundation

/// A libpq connection string as `--postgres-url` gives it (a
/// `postgresql://` URI, or `key=value` pairs), read only as far as needed to
/// keep its passwords out of logs and error messages. libpq parses it when
/// connecting; the rules here follow its parser (`fe-connect.c`).
struct ConnectionString: Sendable {
    let text: String

    init(_ text: String) { self.text = text }

    /// Why libpq would refuse to parse it, if it can tell: a string in
    /// neither form (`localhost`), a URI with a bad `%` escape, pairs that do
    /// not read. Refused at start (exit 2) rather than retried as an
    /// unreachable database; libpq's own message might quote the password.
    var malformation: String? {
        if uriBody != nil {
            var rest = text[...]
            while let percent = rest.firstIndex(of: "%") {
                let digits = rest[rest.index(after: percent)...].prefix(2)
                guard digits.count == 2, let value = UInt8(digits, radix: 16), value != 0 else {
                    return "has a '%' not followed by two hex digits (or %00)"
                }
                rest = rest[digits.endIndex...]
            }
            return nil
        }
        guard text.contains("=") else { return "must be a libpq connection string (host=… dbname=…) or a postgresql:// URI" }
        return Self.pairs(text) == nil ? "does not read as key=value pairs (quote a value with spaces: key='a b')" : nil
    }

    /// The string with every password replaced by `***`: a URI's
    /// `user:password@`, and every query parameter or pair whose name holds
    /// `password` (`password`, `sslpassword`, any case). A string whose
    /// pairs do not read hides everything after the first `password`.
    var redacted: String {
        if let body = uriBody {
            // As libpq reads it: the user information first, then the rest up to `?`, then the query.
            var result = String(text[..<body])
            var rest = text[body...]
            if let userInfo = Self.userInfo(rest) {
                result += userInfo.firstIndex(of: ":").map { userInfo[...$0] + "***" } ?? String(userInfo)
                rest = rest[userInfo.endIndex...]
            }
            guard let question = rest.firstIndex(of: "?") else { return result + rest }
            result += rest[..<question]
            let query = rest[rest.index(after: question)...]
            let parameters = query.split(separator: "&", omittingEmptySubsequences: false).map { parameter in
                guard let equals = parameter.firstIndex(of: "="), Self.isPassword(Self.decoded(parameter[..<equals])) else {
                    return String(parameter)
                }
                return parameter[...equals] + "***"
            }
            return result + "?" + parameters.joined(separator: "&")
        }
        guard let pairs = Self.pairs(text) else {
            guard let end = text.range(of: "password", options: .caseInsensitive)?.upperBound else { return text }
            return text[..<end] + "=***"
        }
        var result = "", copied = text.startIndex
        for pair in pairs where Self.isPassword(pair.key) {
            result += text[copied..<pair.value.lowerBound] + "***"
            copied = pair.value.upperBound
        }
        return result + text[copied...]
    }

    /// `message` (a libpq error, which may quote part of the string, e.g.
    /// `invalid percent-encoded token: "hunt%zzer2"`) with every password
    /// the string holds, as written and as decoded, replaced by `***`.
    func scrubbing(_ message: String) -> String {
        passwords.reduce(message) { $0.replacingOccurrences(of: $1, with: "***") }
    }

    /// Every non-empty password value, as written and percent-decoded, longest first.
    private var passwords: [String] {
        var found: [Substring] = []
        if let body = uriBody {
            let rest = text[body...]
            if let userInfo = Self.userInfo(rest), let colon = userInfo.firstIndex(of: ":") {
                found.append(userInfo[userInfo.index(after: colon)...])
            }
            if let question = rest.firstIndex(of: "?") {
                for parameter in rest[rest.index(after: question)...].split(separator: "&") {
                    if let equals = parameter.firstIndex(of: "="), Self.isPassword(Self.decoded(parameter[..<equals])) {
                        found.append(parameter[parameter.index(after: equals)...])
                    }
                }
            }
            found += found.map { Substring(Self.decoded($0)) }
        } else {
            found = (Self.pairs(text) ?? []).filter { Self.isPassword($0.key) }.map { text[$0.value] }
        }
        return Set(found.filter { !$0.isEmpty }.map(String.init)).sorted { $0.count > $1.count }
    }

    /// Whether a parameter holds a secret: `password`, and any other whose
    /// name holds it (`sslpassword`, the client key's passphrase), in any
    /// case, so a parameter libpq adds later is hidden too. A name libpq
    /// does not know is refused by it, but its value is hidden all the same.
    private static func isPassword(_ name: some StringProtocol) -> Bool {
        name.range(of: "password", options: .caseInsensitive) != nil
    }

    /// Where a URI's part after `postgresql://` or `postgres://` starts.
    private var uriBody: String.Index? {
        for prefix in ["postgresql://", "postgres://"] where text.hasPrefix(prefix) {
            return text.index(text.startIndex, offsetBy: prefix.count)
        }
        return nil
    }

    /// libpq takes a URI's user information up to the first `@` met before a `/`.
    private static func userInfo(_ rest: Substring) -> Substring? {
        guard let end = rest.firstIndex(where: { $0 == "@" || $0 == "/" }), rest[end] == "@" else { return nil }
        return rest[..<end]
    }

    /// `key = value` pairs, a value unquoted (up to white space) or in single
    /// quotes, `\` escaping the next character in either; `nil` when the
    /// string does not read as pairs (libpq refuses it too).
    private static func pairs(_ text: String) -> [(key: Substring, value: Range<String.Index>)]? {
        var pairs: [(key: Substring, value: Range<String.Index>)] = []
        var i = text.startIndex
        func advance(while condition: (Character) -> Bool) {
            while i < text.endIndex, condition(text[i]) { i = text.index(after: i) }
        }
        while true {
            advance(while: \.isWhitespace)
            guard i < text.endIndex else { return pairs }
            let keyStart = i
            advance { $0 != "=" && !$0.isWhitespace }
            let key = text[keyStart..<i]
            advance(while: \.isWhitespace)
            guard !key.isEmpty, i < text.endIndex, text[i] == "=" else { return nil }
            i = text.index(after: i)
            advance(while: \.isWhitespace)
            let quoted = i < text.endIndex && text[i] == "'"
            if quoted { i = text.index(after: i) }
            let valueStart = i
            var escaped = false
            advance { character in
                defer { escaped = !escaped && character == "\\" }
                return escaped || (quoted ? character != "'" : !character.isWhitespace)
            }
            let value = valueStart..<i
            if quoted {
                guard i < text.endIndex else { return nil }
                i = text.index(after: i)
            }
            pairs.append((key, value))
        }
    }

    /// `%XX` decoded, as libpq decodes a URI's parts; text that does not
    /// decode is returned as it is.
    private static func decoded(_ text: Substring) -> String {
        text.removingPercentEncoding ?? String(text)
    }
}
