import JSON
/// One HTTP response as a plain value.
///
/// libmicrohttpd writes `Content-Length` (and omits the body for HEAD) by
/// itself, so `Content-Length`, `Transfer-Encoding` and `Connection` headers
/// given here are not sent as given: use `closeConnection` to close.
public struct HTTPResponse: Sendable {
    /// The `Retry-After` of every 503 the service sends (shutting down,
    /// storage full or unusable): one value, so clients need one rule.
    public static let retryAfterSeconds = "5"

    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// Adds `Connection: close` and closes the connection after sending.
    public var closeConnection: Bool

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = [], closeConnection: Bool = false) {
        self.status = status
        self.headers = headers
        self.body = body
        self.closeConnection = closeConnection
    }

    /// The contract's error body `{"error":{"code":…,"message":…}}` with
    /// `Content-Type: application/json`.
    public static func error(status: Int, code: String, message: String, closeConnection: Bool = false) -> HTTPResponse {
        let body = JSONWriter.encode(.object([("error", .object([("code", .string(code)), ("message", .string(message))]))]))
        return HTTPResponse(status: status, headers: [("Content-Type", "application/json")],
                            body: body, closeConnection: closeConnection)
    }
}
