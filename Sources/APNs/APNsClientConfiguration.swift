/// How an `APNsClient` reaches APNs.
public struct APNsClientConfiguration: Sendable {
    public static let productionDefault = "https://api.push.apple.com"
    public static let sandboxDefault = "https://api.sandbox.push.apple.com"

    /// Each environment's base URL: `https://` only (APNs speaks HTTP/2
    /// over TLS alone), a host and optional port, e.g. `https://127.0.0.1:8443`
    /// for a test server.
    public var productionURL: String
    public var sandboxURL: String
    /// A CA certificate file (PEM) trusted in addition to the system's
    /// roots, for a proxy or a test server. TLS is always verified.
    public var caFile: String?
    /// A request unanswered by then has an uncertain outcome.
    public var requestTimeout: Duration
    /// How long connecting (TCP and TLS) may take; at most `requestTimeout`.
    /// A request whose connection was not made in time was never sent.
    public var connectTimeout: Duration
    /// HTTP/2 connections per environment; each carries many streams.
    public var connectionsPerHost: Int
    /// Streams in flight per connection (APNs allows about 1000); more
    /// requests wait in memory, unsent.
    public var maxStreamsPerConnection: Int
    /// The nice value of the client's thread (Linux keeps one per thread):
    /// a server whose own API must stay fast while it sends gives this
    /// thread a higher one, so under CPU contention sending slows rather
    /// than answering. 0 keeps the process's.
    public var threadNiceness: Int32 = 0

    public init(productionURL: String = Self.productionDefault, sandboxURL: String = Self.sandboxDefault,
                caFile: String? = nil, requestTimeout: Duration = .seconds(10), connectTimeout: Duration = .seconds(5),
                connectionsPerHost: Int = 1, maxStreamsPerConnection: Int = 1000) {
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.caFile = caFile
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.connectionsPerHost = connectionsPerHost
        self.maxStreamsPerConnection = maxStreamsPerConnection
    }

    func baseURL(_ host: APNsHost) -> String {
        switch host {
        case .production: productionURL
        case .sandbox: sandboxURL
        }
    }
}
