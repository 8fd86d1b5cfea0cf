/// One complete HTTP request as a plain value.
///
/// `path` and `query` are exactly the bytes of the request target (split at
/// the first `?`), not percent-decoded: decoding belongs to the router, which
/// knows which segments are identifiers.
public struct HTTPRequest: Sendable {
    /// As sent, e.g. "GET".
    public var method: String
    /// Raw path without the query.
    public var path: String
    /// Raw query string after `?`, nil when the target has none.
    public var query: String?
    /// "HTTP/1.1" or "HTTP/1.0".
    public var version: String
    public var headers: HTTPHeaders
    /// Empty in the `head` call; the full body in `handle`.
    public var body: [UInt8]

    public init(method: String, path: String, query: String? = nil, version: String = "HTTP/1.1",
                headers: [(String, String)] = [], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.version = version
        self.headers = HTTPHeaders(headers)
        self.body = body
    }

    /// Splits a raw request target at its first `?` into path and query.
    static func splitTarget(_ target: String) -> (path: String, query: String?) {
        let utf8 = target.utf8
        guard let mark = utf8.firstIndex(of: UInt8(ascii: "?")) else { return (target, nil) }
        return (String(target[..<mark]), String(target[utf8.index(after: mark)...]))
    }
}
