import Codecs

/// RFC 3986 percent-decoding of one path segment or query component.
/// `+` is kept as `+` (it is not a space outside HTML forms, and iOS's
/// `URLComponents` does not encode it). The result must be valid UTF-8.
enum PercentDecoding {
    static func decode(_ text: String) -> String? {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return text }
        var out: [UInt8] = []
        var bytes = text.utf8.makeIterator()
        while let b = bytes.next() {
            guard b == UInt8(ascii: "%") else { out.append(b); continue }
            guard let hi = bytes.next().flatMap(Hex.digitValue),
                  let lo = bytes.next().flatMap(Hex.digitValue) else { return nil }
            out.append(hi << 4 | lo)
        }
        return String(validating: out, as: UTF8.self)
    }
}

/// A parsed query string: `name=value` pairs split on `&`, both decoded.
struct QueryParameters {
    private var values: [String: [String]] = [:]

    /// Fails with the name of a parameter that is not valid percent-encoding.
    init(_ query: String?) throws(APIError) {
        guard let query, !query.isEmpty else { return }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let rawName = String(parts[0])
            guard let name = PercentDecoding.decode(rawName) else {
                throw .invalidField("query parameter", "is not valid percent-encoding")
            }
            guard let value = PercentDecoding.decode(parts.count > 1 ? String(parts[1]) : "") else {
                throw .invalidField(name, "is not valid percent-encoding")
            }
            values[name, default: []].append(value)
        }
    }

    /// The parameter's one value; `nil` when absent; an error when repeated.
    func single(_ name: String) throws(APIError) -> String? {
        guard let found = values[name] else { return nil }
        guard found.count == 1 else { throw .invalidField(name, "must be given at most once") }
        return found[0]
    }
}
