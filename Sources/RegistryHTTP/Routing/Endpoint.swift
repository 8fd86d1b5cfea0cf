import HTTPServer
import RegistryCore

/// One endpoint of docs/api.md: everything the service knows about it, in one row
/// of `RouteTable`. Routing, 404/405 with `Allow`, the credential check, the
/// body rules, the metrics label and the handler all read it from here.
struct Endpoint: Sendable {
    /// Who may call an endpoint.
    enum Surface: Sendable {
        /// `/v1`: a device JWT.
        case device
        /// `/internal/v1` and `/metrics`: the internal API key.
        case `internal`
        /// `/healthz`, `/openapi.json`, the console's files: anyone (they hold no one's data).
        case open

        /// docs/api.md's body limit: 16 KiB on the device API, 1 MiB on the
        /// internal API. It bounds every request on the surface, so a
        /// bodiless route still refuses a large declared body with 413.
        var maxBodyBytes: Int {
            switch self {
            case .device, .open: 16 * 1024
            case .internal: 1024 * 1024
            }
        }
    }

    /// What answers the endpoint. A read is given the store's reads: on the
    /// server's own thread when the store's reads never wait (LMDB), else
    /// on a thread the store may block (`RegistryStore.read`) while the
    /// connection is suspended. A write waits for a commit, so it runs as a
    /// task with the connection suspended.
    enum Handler: Sendable {
        case read(@Sendable (RegistryApplication, Call, any RegistryReads) throws -> HTTPResponse)
        case write(@Sendable (RegistryApplication, Call) async throws -> HTTPResponse)
    }

    /// What the read-only operator key may do on an internal route.
    enum OperatorAccess: Sendable {
        /// Nothing (403): writes, feedback, cancel, the token-bearing
        /// sender reads, `/metrics` (which keeps the internal key's rule).
        case refused
        /// Read: the route answers no token (the stats, notifications and
        /// their deliveries, history, the operator reads).
        case reads
        /// Read with `view=operator` only: a sender read whose operator
        /// view carries fingerprints where the sender view has tokens.
        case operatorView

        func admits(query: String?) -> Bool {
            switch self {
            case .refused: false
            case .reads: true
            case .operatorView: ((try? QueryParameters(query).single("view")) ?? nil) == "operator"
            }
        }
    }

    /// A path segment of the template.
    enum Segment: Sendable, Equatable {
        case literal([UInt8])
        /// `{name}`: one non-empty segment, kept percent-encoded; `name` is the field its errors name.
        case parameter(String)
    }

    /// `"METHOD /path/{param}"`: the row's key, and the stable label for metrics and logs.
    let label: String
    let method: String
    let segments: [Segment]
    let surface: Surface
    /// What the read-only operator key may do here (`.refused` off the internal surface).
    let operatorAccess: OperatorAccess
    /// Whether a body must be JSON (checked for media type and parsed by the handler).
    let takesJSON: Bool
    let maxBodyBytes: Int
    let handler: Handler

    /// The name of the path parameter, if the template has one (at most one does).
    var parameterName: String? {
        for case .parameter(let name) in segments { return name }
        return nil
    }

    /// Whether the handler may run with `credential` for a request with
    /// `query`: each surface takes its own kind only, and the operator key
    /// only where `operatorAccess` lets it; so a handler never sees a
    /// caller admission would have refused.
    func admits(_ credential: Credential, query: String?) -> Bool {
        switch (surface, credential) {
        case (.device, .device), (.internal, .internalKey), (.open, .anonymous): true
        case (.internal, .operatorKey): operatorAccess.admits(query: query)
        default: false
        }
    }

    /// Why the operator key is refused here (a 403's message).
    var operatorKeyRefusal: String {
        switch operatorAccess {
        case .operatorView: "the operator key reads this route only with view=operator (fingerprints, never a token)"
        case .refused, .reads: "the operator key is read-only: \(label) needs the internal API key"
        }
    }

    init(_ label: String, _ surface: Surface, json takesJSON: Bool = false, operator operatorAccess: OperatorAccess = .refused,
         _ handler: Handler) {
        let parts = label.split(separator: " ", maxSplits: 1)
        precondition(parts.count == 2 && parts[1].hasPrefix("/"), "an endpoint is 'METHOD /path': \(label)")
        self.label = label
        method = String(parts[0])
        segments = parts[1].dropFirst().split(separator: "/", omittingEmptySubsequences: false).map { part in
            part.hasPrefix("{") && part.hasSuffix("}")
                ? .parameter(String(part.dropFirst().dropLast())) : .literal(Array(part.utf8))
        }
        self.surface = surface
        precondition(surface == .internal || operatorAccess == .refused, "the operator key is for internal routes only: \(label)")
        self.operatorAccess = operatorAccess
        self.takesJSON = takesJSON
        maxBodyBytes = surface.maxBodyBytes
        self.handler = handler
    }
}

/// A request that passed admission, as its handler sees it.
struct Call: Sendable {
    /// The row and the path parameter as sent (still percent-encoded).
    let match: Router.Match
    let credential: Credential
    let request: HTTPRequest

    var endpoint: Endpoint { match.endpoint }

    /// The caller's user on the device API (the JWT's `sub`). A device
    /// handler runs only with a device credential (`Surface.admits`), so
    /// the empty fallback is never reached by one.
    var userId: String {
        if case .device(let userId) = credential { return userId }
        return ""
    }

    /// The path parameter, percent-decoded and checked by `rule`; its errors name the template's field.
    func parameter(_ rule: (String, String) throws(APIError) -> String) throws(APIError) -> String {
        try FieldCheck.pathSegment(match.rawParameter ?? "", field: endpoint.parameterName ?? "path", check: rule)
    }
}
