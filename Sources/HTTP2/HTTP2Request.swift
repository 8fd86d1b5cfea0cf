/// One request: `method` `path` on `origin`, with header lines and a body.
/// Requests to one origin share its connections (many streams each).
public struct HTTP2Request: Sendable {
    /// `https://host[:port]`, no path (see `HTTP2Client.problem(withOrigin:)`).
    public var origin: String
    /// From the root, e.g. `/3/device/abcd…`.
    public var path: String
    public var method: String
    /// `name: value` lines, sent as given (besides `authorization`).
    public var headers: [String]
    /// The `authorization` header's value, asked for when the request is
    /// started (not when it is queued), so a request that waited for a
    /// stream still carries the credential that is current then.
    public var authorization: (@Sendable () -> String)?
    public var body: [UInt8]
    /// The response headers to keep (lowercase names); others are dropped.
    public var responseHeaders: Set<String>

    public init(origin: String, path: String, method: String = "POST", headers: [String] = [],
                authorization: (@Sendable () -> String)? = nil, body: [UInt8], responseHeaders: Set<String> = []) {
        self.origin = origin
        self.path = path
        self.method = method
        self.headers = headers
        self.authorization = authorization
        self.body = body
        self.responseHeaders = responseHeaders
    }

    /// Why this request cannot be sent as it is (a header value or path with
    /// a control character), or `nil`.
    var invalidity: String? {
        if path.utf8.contains(where: Self.isControl) { return "the path contains a control character" }
        for line in headers where line.utf8.contains(where: Self.isControl) {
            let name = line.split(separator: ":", maxSplits: 1).first.map(String.init) ?? line
            return "\(name) contains a control character"
        }
        return nil
    }

    private static func isControl(_ byte: UInt8) -> Bool { byte < 0x20 || byte == 0x7F }
}
