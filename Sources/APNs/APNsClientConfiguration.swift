import HTTP2

/// How an `APNsClient` reaches APNs.
public struct APNsClientConfiguration: Sendable {
    public static let productionDefault = "https://api.push.apple.com"
    public static let sandboxDefault = "https://api.sandbox.push.apple.com"

    /// Each environment's base URL: `https://` only (APNs speaks HTTP/2
    /// over TLS alone), a host and optional port, e.g. `https://127.0.0.1:8443`
    /// for a test server.
    public var productionURL: String
    public var sandboxURL: String
    /// The connections: the extra CA, the request and connect timeouts,
    /// connections per environment, streams in flight on each (APNs allows
    /// about 1000), how long one may stay idle (`pingInterval`), the client
    /// thread's niceness.
    public var http: HTTP2ClientConfiguration

    /// - Parameter pingInterval: `--apns-ping-interval`: a connection idle
    ///   this long is replaced before it carries another request
    ///   (`HTTP2ClientConfiguration.maxIdle`; libcurl 7.88 cannot PING it).
    public init(productionURL: String = Self.productionDefault, sandboxURL: String = Self.sandboxDefault,
                caFile: String? = nil, requestTimeout: Duration = .seconds(10), pingInterval: Duration = .seconds(300)) {
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        http = HTTP2ClientConfiguration(name: "apns", caFile: caFile, requestTimeout: requestTimeout)
        http.maxIdle = pingInterval
    }

    func baseURL(_ host: APNsHost) -> String {
        switch host {
        case .production: productionURL
        case .sandbox: sandboxURL
        }
    }
}
