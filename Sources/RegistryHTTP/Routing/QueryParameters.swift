import Codecs

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
