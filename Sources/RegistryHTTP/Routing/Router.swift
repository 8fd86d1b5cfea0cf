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

    static func match(method: String, path: String) -> Result<Match, APIError> {
        var path = path
        return path.withUTF8 { bytes in
            withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: maxSegments) { bounds in
                guard let count = split(bytes, into: bounds) else { return .failure(.notFound) }
                return match(method: method, bytes, UnsafeMutableBufferPointer(rebasing: bounds[..<count]))
            }
        }
    }

    /// The most segments any template has: a longer path matches nothing.
    private static let maxSegments = RouteTable.endpoints.map(\.segments.count).max() ?? 0

    /// The segments' byte ranges after the leading `/`; nil when the path
    /// does not start with `/`, has an empty segment, or has too many.
    private static func split(_ bytes: UnsafeBufferPointer<UInt8>, into bounds: UnsafeMutableBufferPointer<Range<Int>>) -> Int? {
        guard bytes.first == UInt8(ascii: "/") else { return nil }
        var count = 0
        var start = 1
        for i in 1...bytes.count where i == bytes.count || bytes[i] == UInt8(ascii: "/") {
            guard i > start, count < bounds.count else { return nil }
            bounds[count] = start..<i
            count += 1
            start = i + 1
        }
        return count
    }

    private static func match(method: String, _ bytes: UnsafeBufferPointer<UInt8>,
                              _ segments: UnsafeMutableBufferPointer<Range<Int>>) -> Result<Match, APIError> {
        let effective = method == "HEAD" ? "GET" : method
        var allowed: [String] = []
        for endpoint in RouteTable.endpoints {
            guard let parameter = bind(endpoint.segments, bytes, segments) else { continue }
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

    /// Whether the segments fit the template: `.some(parameter)` when they do
    /// (`.some(nil)` for a template without one), nil when they do not.
    private static func bind(_ template: [Endpoint.Segment], _ bytes: UnsafeBufferPointer<UInt8>,
                             _ segments: UnsafeMutableBufferPointer<Range<Int>>) -> String?? {
        guard template.count == segments.count else { return nil }
        for (part, range) in zip(template, segments) {
            if case .literal(let literal) = part, !bytes[range].elementsEqual(literal) { return nil }
        }
        for (part, range) in zip(template, segments) {
            if case .parameter = part {
                return .some(String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self))
            }
        }
        return .some(nil)
    }
}
