import Codecs
import Foundation
import HTTPServer
import JSON
import RegistryCore

/// The registry's HTTP API as plain functions of `HTTPRequest` values: the
/// server adapter calls `head` when headers are complete, then the handler
/// `head` chose with the whole request, so almost every test runs without a
/// socket. Each endpoint's facts live in one row of `RouteTable`.
///
/// Checks run in docs/api.md's order, and the first failure answers: route
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
    /// The notification routes' parts; `nil` when no APNs key is configured.
    let delivery: DeliveryRoutes?

    public init(store: any RegistryStore, authenticator: Authenticator, metrics: RegistryMetrics,
                logger: Logger, configuration: Configuration = Configuration(), delivery: DeliveryRoutes? = nil) {
        self.store = store
        self.delivery = delivery
        self.authenticator = authenticator
        self.metrics = metrics
        self.logger = logger
        self.configuration = configuration
    }

    /// The wall clock the credentials are checked against (a test's clock
    /// in tests): windows of time a read reports on end here.
    var now: Timestamp { authenticator.clock.now() }

    /// Route, credential, media type and declared size, once per request;
    /// the handler it picks carries what they established.
    public func head(_ request: HTTPRequest) -> HeadDecision {
        let started = ContinuousClock.now
        switch Router.match(method: request.method, path: request.path) {
        case .failure(let error):
            return refuse(request, label: "unmatched", error, started: started)
        case .success(let match):
            switch admit(request, match.endpoint) {
            case .failure(let error):
                return refuse(request, label: match.endpoint.label, error, started: started)
            case .success(let credential):
                return .readBody(maxBytes: match.endpoint.maxBodyBytes,
                                 then: handler(for: match, credential: credential))
            }
        }
    }

    /// Credential, media type and declared size for a matched endpoint.
    func admit(_ request: HTTPRequest, _ endpoint: Endpoint) -> Result<Credential, APIError> {
        let credential: Credential
        switch authenticator.authenticate(request.headers, for: endpoint.surface) {
        case .success(let c): credential = c
        case .failure(let error): return .failure(error)
        }
        // The authenticator hands out only the surface's kinds: what is left is the operator key off its routes.
        guard endpoint.admits(credential, query: request.query) else { return .failure(.forbidden(endpoint.operatorKeyRefusal)) }
        if endpoint.takesJSON, Self.hasBody(request), !Self.isJSON(request.headers["Content-Type"]) {
            return .failure(.unsupportedMediaType)
        }
        if let declared = request.headers["Content-Length"].flatMap({ Int($0) }), declared > endpoint.maxBodyBytes {
            return .failure(.payloadTooLarge(limit: endpoint.maxBodyBytes))
        }
        return .success(credential)
    }

    private func refuse(_ request: HTTPRequest, label: String, _ error: APIError,
                        started: ContinuousClock.Instant) -> HeadDecision {
        let response = error.response
        finish(request, label: label, response, started: started)
        return .respond(response)
    }

    /// The endpoint's handler bound to this call: inline for reads the store serves without
    /// waiting, suspending for other reads and for writes.
    /// The body is within the row's limit: the server reads at most `readBody`'s `maxBytes`.
    /// A credential the row does not admit for the request (another surface's kind, the
    /// operator key off its routes or views) answers 401 and runs nothing: admission never
    /// hands one over, and this keeps a slip there from reaching anyone's data.
    func handler(for match: Router.Match, credential: Credential) -> RequestHandler {
        let endpoint = match.endpoint
        let refuse: @Sendable (HTTPRequest) -> HTTPResponse = { [self] request in
            let response = APIError.unauthenticated("Authorization: this route needs a credential of its own kind").response
            finish(request, label: endpoint.label, response, started: .now)
            return response
        }
        switch admittedHandler(for: match, credential: credential) {
        case .inline(let respond):
            return .inline { request in endpoint.admits(credential, query: request.query) ? respond(request) : refuse(request) }
        case .suspending(let respond):
            return .suspending { request in
                endpoint.admits(credential, query: request.query) ? await respond(request) : refuse(request)
            }
        }
    }

    /// `handler(for:credential:)` once the credential is known to be admitted.
    private func admittedHandler(for match: Router.Match, credential: Credential) -> RequestHandler {
        let label = match.endpoint.label
        switch match.endpoint.handler {
        case .read(let read):
            if let reads = store.inlineReads {
                return .inline { [self] request in
                    let started = ContinuousClock.now
                    let call = Call(match: match, credential: credential, request: request)
                    let response: HTTPResponse
                    do {
                        response = try read(self, call, reads)
                    } catch {
                        response = self.response(for: error, call)
                    }
                    finish(request, label: label, response, started: started)
                    return response
                }
            }
            return .suspending { [self] request in
                let started = ContinuousClock.now
                let call = Call(match: match, credential: credential, request: request)
                let response: HTTPResponse
                do {
                    response = try await store.read { reads in try read(self, call, reads) }
                } catch {
                    response = self.response(for: error, call)
                }
                finish(request, label: label, response, started: started)
                return response
            }
        case .write(let write):
            return .suspending { [self] request in
                let started = ContinuousClock.now
                let call = Call(match: match, credential: credential, request: request)
                let response: HTTPResponse
                do {
                    response = try await write(self, call)
                } catch {
                    response = self.response(for: error, call)
                }
                finish(request, label: label, response, started: started)
                return response
            }
        }
    }

    /// What a handler threw, as the contract's answer.
    private func response(for error: any Error, _ call: Call) -> HTTPResponse {
        switch error {
        case let error as APIError:
            return error.response
        case DeliveryError.idempotencyKeyReused:
            return APIError.idempotencyKeyReused.response
        case DeliveryError.notFound:
            return APIError.notificationNotFound.response
        case DeliveryError.queueFull(let pending, let limit):
            return APIError.queueFull(pending: pending, limit: limit).response
        case let error as RegistryError:
            if case .unavailable(let reason) = error {
                logger.error("storage_unavailable", [("route", .string(call.endpoint.label)), ("reason", .string(reason))])
            }
            return APIError(error).response
        default:
            logger.error("internal_error", [("route", .string(call.endpoint.label)),
                                            ("error", .string(String(describing: error)))])
            return APIError.internalError.response
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
        HTTPResponse(status: status, headers: jsonHeaders, body: JSONWriter.encode(value))
    }

    /// A JSON response written by streaming calls into a buffer of about `capacity` bytes.
    static func json(_ status: Int, capacity: Int, _ write: (inout JSONWriter) -> Void) -> HTTPResponse {
        var writer = JSONWriter(capacity: capacity)
        write(&writer)
        return HTTPResponse(status: status, headers: jsonHeaders, body: writer.bytes)
    }

    static let jsonHeaders = [("Content-Type", "application/json")]

    /// `{"devices": [view, …]}`, each device written by `view`.
    static func devicesDocument(_ devices: [DeviceRecord], _ view: (DeviceRecord, inout JSONWriter) -> Void) -> HTTPResponse {
        json(200, capacity: 16 + devices.count * bytesPerDevice) { w in
            w.beginObject()
            w.key("devices")
            w.beginArray()
            for device in devices { view(device, &w) }
            w.endArray()
            w.endObject()
        }
    }

    /// About what one device's view takes, to size response buffers.
    static let bytesPerDevice = 512

    static let noContent = HTTPResponse(status: 204)
}
