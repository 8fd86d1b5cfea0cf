import HTTPServer
import RegistryCore

/// A rejection in the contract's terms: status, snake_case code, and a
/// message naming the offending field or header. The one place where
/// domain errors become HTTP answers is `init(_: RegistryError)`.
public struct APIError: Error, Hashable, Sendable {
    public var status: Int
    public var code: String
    public var message: String
    public var headers: [String: String]

    public init(status: Int, code: String, message: String, headers: [String: String] = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public static func invalidField(_ field: String, _ problem: String) -> APIError {
        APIError(status: 400, code: "invalid_field", message: "\(field) \(problem)")
    }

    public static func invalidJSON(_ detail: String) -> APIError {
        APIError(status: 400, code: "invalid_json", message: "body is not a JSON object: \(detail)")
    }

    public static func unauthenticated(_ message: String) -> APIError {
        APIError(status: 401, code: "unauthenticated", message: message, headers: ["WWW-Authenticate": "Bearer"])
    }

    public static func forbidden(_ message: String) -> APIError {
        APIError(status: 403, code: "forbidden", message: message)
    }

    public static let notFound = APIError(status: 404, code: "not_found", message: "no such route")

    public static func recordNotFound(_ what: String) -> APIError {
        APIError(status: 404, code: "not_found", message: "\(what) not found")
    }

    public static func methodNotAllowed(_ allowed: [String]) -> APIError {
        APIError(status: 405, code: "method_not_allowed", message: "method not allowed; allowed: \(allowed.joined(separator: ", "))",
                 headers: ["Allow": allowed.joined(separator: ", ")])
    }

    public static func payloadTooLarge(limit: Int) -> APIError {
        APIError(status: 413, code: "payload_too_large", message: "body is over \(limit) bytes")
    }

    public static let unsupportedMediaType = APIError(
        status: 415, code: "unsupported_media_type", message: "Content-Type must be application/json")

    public static func unavailable(_ message: String) -> APIError {
        APIError(status: 503, code: "unavailable", message: message, headers: ["Retry-After": HTTPResponse.retryAfterSeconds])
    }

    /// A bug: the message carries no internals (they go to the log).
    public static let internalError = APIError(status: 500, code: "internal", message: "internal error")

    public init(_ error: RegistryError) {
        switch error {
        case .invalidField(let field, let message):
            self = .invalidField(field, message)
        case .staleWrite:
            self = APIError(status: 409, code: "stale_write",
                            message: "sequence is older than the stored one, or not newer than a sign-out's")
        case .storageFull:
            self = .unavailable("storage is full")
        case .unavailable:
            // The reason (an errno text, "shutting down") is logged by the
            // caller; an answer carries no internals.
            self = .unavailable("storage is unavailable")
        }
    }

    public var response: HTTPResponse {
        var response = HTTPResponse.error(status: status, code: code, message: message)
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { response.headers.append((name, value)) }
        return response
    }
}
