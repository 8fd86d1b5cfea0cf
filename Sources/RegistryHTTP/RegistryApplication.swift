import Foundation
import HTTPServer
import JSON
import Registry

/// The registry's HTTP API as plain functions of `HTTPRequest` values: the
/// server adapter calls `head` when headers are complete and `handle` with
/// the whole request, so almost every test runs without a socket.
///
/// Checks run in API.md's order, and the first failure answers: route
/// (404/405), credential (401/403), media type (415), size (413), JSON (400),
/// fields (400). Framing (400, 431) is the server adapter's.
public final class RegistryApplication: HTTPApplication {
    public struct Configuration: Sendable {
        /// `POST /internal/v1/users/lookup` takes at most this many ids.
        public var maxLookupUsers = 1_000
        public var defaultPageLimit = 500
        public var maxPageLimit = 1_000
        public init() {}
    }

    let store: any RegistryStore
    let authenticator: Authenticator
    let metrics: RegistryMetrics
    let logger: Logger
    let configuration: Configuration

    public init(store: any RegistryStore, authenticator: Authenticator, metrics: RegistryMetrics,
                logger: Logger, configuration: Configuration = Configuration()) {
        self.store = store
        self.authenticator = authenticator
        self.metrics = metrics
        self.logger = logger
        self.configuration = configuration
    }

    /// What the checks before the body established.
    struct Admitted {
        var route: Route
        var credential: Credential
    }

    public func head(_ request: HTTPRequest) -> HeadDecision {
        switch admit(request) {
        case .success(let admitted):
            return .readBody(maxBytes: admitted.route.maxBodyBytes)
        case .failure(let error):
            finish(request, label: routeLabel(request), error.response, started: .now)
            return .respond(error.response)
        }
    }

    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let started = ContinuousClock.now
        let response: HTTPResponse
        var label = "unmatched"
        switch admit(request) {
        case .failure(let error):
            response = error.response
        case .success(let admitted):
            label = admitted.route.label
            if request.body.count > admitted.route.maxBodyBytes {
                response = APIError.payloadTooLarge(limit: admitted.route.maxBodyBytes).response
            } else {
                response = await respond(to: request, admitted)
            }
        }
        finish(request, label: label, response, started: started)
        return response
    }

    /// Route, credential, media type and declared size.
    func admit(_ request: HTTPRequest) -> Result<Admitted, APIError> {
        let route: Route
        switch Router.match(method: request.method, path: request.path) {
        case .success(let matched): route = matched
        case .failure(let error): return .failure(error)
        }
        let credential: Credential
        switch authenticator.authenticate(request.headers, for: route.surface) {
        case .success(let c): credential = c
        case .failure(let error): return .failure(error)
        }
        if route.takesBody, Self.hasBody(request), !Self.isJSON(request.headers["Content-Type"]) {
            return .failure(.unsupportedMediaType)
        }
        if let declared = request.headers["Content-Length"].flatMap({ Int($0) }), declared > route.maxBodyBytes {
            return .failure(.payloadTooLarge(limit: route.maxBodyBytes))
        }
        return .success(Admitted(route: route, credential: credential))
    }

    private func respond(to request: HTTPRequest, _ admitted: Admitted) async -> HTTPResponse {
        do {
            return try await dispatch(request, admitted)
        } catch let error as APIError {
            return error.response
        } catch let error as RegistryError {
            if case .unavailable(let reason) = error {
                logger.error("storage_unavailable", [("route", .string(admitted.route.label)), ("reason", .string(reason))])
            }
            return APIError(error).response
        } catch {
            logger.error("internal_error", [("route", .string(admitted.route.label)),
                                            ("error", .string(String(describing: error)))])
            return APIError.internalError.response
        }
    }

    private func dispatch(_ request: HTTPRequest, _ admitted: Admitted) async throws -> HTTPResponse {
        switch (admitted.route, admitted.credential) {
        case (_, .device(let userId)):
            return try await handleDeviceAPI(admitted.route, userId: userId, request)
        default:
            return try await handleInternalAPI(admitted.route, request)
        }
    }

    private func finish(_ request: HTTPRequest, label: String, _ response: HTTPResponse, started: ContinuousClock.Instant) {
        let seconds = (ContinuousClock.now - started).inSeconds
        metrics.recordRequest(route: label, status: response.status, seconds: seconds)
        if logger.isEnabled(.debug) {
            logger.debug("request", [("method", .string(request.method)), ("route", .string(label)),
                                     ("status", .int(Int64(response.status))),
                                     ("micros", .int(Int64(seconds * 1e6)))])
        }
    }

    private func routeLabel(_ request: HTTPRequest) -> String {
        (try? Router.match(method: request.method, path: request.path).get())?.label ?? "unmatched"
    }

    static func hasBody(_ request: HTTPRequest) -> Bool {
        if !request.body.isEmpty || request.headers["Transfer-Encoding"] != nil { return true }
        return (request.headers["Content-Length"].flatMap { Int($0) } ?? 0) > 0
    }

    /// `application/json`, with any parameters (`; charset=utf-8`).
    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first ?? ""
        return mediaType.trimmingCharacters(in: .whitespaces).lowercased() == "application/json"
    }

    static func json(_ status: Int, _ value: JSONWriter.Value) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: JSONWriter.encode(value))
    }

    static let noContent = HTTPResponse(status: 204)
}
