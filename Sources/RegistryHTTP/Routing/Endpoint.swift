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

        /// Whether a handler on this surface may run with `credential`:
        /// each surface takes its own kind only, so a handler never sees a
        /// caller admission would have refused.
        func admits(_ credential: Credential) -> Bool {
            switch (self, credential) {
            case (.device, .device), (.internal, .operatorKey), (.open, .anonymous): true
            default: false
            }
        }

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
    /// Whether a body must be JSON (checked for media type and parsed by the handler).
    let takesJSON: Bool
    let maxBodyBytes: Int
    let handler: Handler

    /// The name of the path parameter, if the template has one (at most one does).
    var parameterName: String? {
        for case .parameter(let name) in segments { return name }
        return nil
    }

    init(_ label: String, _ surface: Surface, json takesJSON: Bool = false, _ handler: Handler) {
        let parts = label.split(separator: " ", maxSplits: 1)
        precondition(parts.count == 2 && parts[1].hasPrefix("/"), "an endpoint is 'METHOD /path': \(label)")
        self.label = label
        method = String(parts[0])
        segments = parts[1].dropFirst().split(separator: "/", omittingEmptySubsequences: false).map { part in
            part.hasPrefix("{") && part.hasSuffix("}")
                ? .parameter(String(part.dropFirst().dropLast())) : .literal(Array(part.utf8))
        }
        self.surface = surface
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
