/// One HTTP response as a plain value.
///
/// libmicrohttpd writes `Content-Length` (and omits the body for HEAD) by
/// itself, so `Content-Length`, `Transfer-Encoding` and `Connection` headers
/// given here are not sent as given: use `closeConnection` to close.
public struct HTTPResponse: Sendable {
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
        let json = "{\"error\":{\"code\":\(jsonString(code)),\"message\":\(jsonString(message))}}"
        return HTTPResponse(status: status, headers: [("Content-Type", "application/json")],
                            body: Array(json.utf8), closeConnection: closeConnection)
    }

    /// A JSON string literal: quotes, backslashes and control characters
    /// escaped, everything else passed through as UTF-8.
    static func jsonString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
