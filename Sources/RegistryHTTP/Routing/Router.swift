/// Finds a request's row in `RouteTable`: 404 when no row has the path, 405
/// (with `Allow`) when one has it but not with this method.
///
/// Segments are split on `/` before any percent-decoding, so an id holding
/// `%2F` stays one segment. Empty segments (`//`, a trailing `/`) match no
/// route. `HEAD` is accepted wherever `GET` is.
enum Router {
    struct Match: Sendable {
        let endpoint: Endpoint
        /// The path parameter as sent, when the template has one.
        let rawParameter: String?
    }

    static func match(method: String, path: String, in endpoints: [Endpoint] = RouteTable.endpoints)
        -> Result<Match, APIError> {
        let utf8 = path.utf8
        guard utf8.first == UInt8(ascii: "/") else { return .failure(.notFound) }
        let segments = utf8.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard !segments.contains(where: \.isEmpty) else { return .failure(.notFound) }
        let effective = method == "HEAD" ? "GET" : method
        var allowed: [String] = []
        for endpoint in endpoints {
            guard let parameter = bind(endpoint.segments, to: segments) else { continue }
            if endpoint.method == effective {
                return .success(Match(endpoint: endpoint, rawParameter: parameter))
            }
            if !allowed.contains(endpoint.method) { allowed.append(endpoint.method) }
        }
        guard !allowed.isEmpty else { return .failure(.notFound) }
        allowed.sort()
        if allowed.contains("GET") { allowed.append("HEAD") }
        return .failure(.methodNotAllowed(allowed))
    }

    /// Whether `segments` fit the template: `.some(parameter)` when they do
    /// (`.some(nil)` for a template without one), nil when they do not.
    private static func bind(_ template: [Endpoint.Segment], to segments: [Substring.UTF8View]) -> String?? {
        guard template.count == segments.count else { return nil }
        var parameter: String?
        for (part, segment) in zip(template, segments) {
            switch part {
            case .literal(let bytes):
                guard segment.elementsEqual(bytes) else { return nil }
            case .parameter:
                parameter = String(Substring(segment))
            }
        }
        return .some(parameter)
    }
}
