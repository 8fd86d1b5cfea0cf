/// How an `HTTP2Client` reaches the servers of one provider.
public struct HTTP2ClientConfiguration: Sendable {
    /// Names the client's thread and its errors (`apns`, `fcm`).
    public var name: String
    /// A CA certificate file (PEM) trusted in addition to the system's
    /// roots, for a proxy or a test server (an `https://` proxy's own
    /// certificate too). TLS is always verified.
    public var caFile: String?
    /// The HTTP CONNECT proxy every connection goes through; `nil`: straight
    /// to the server, whatever proxy variables the environment holds.
    public var proxy: HTTP2Proxy?
    /// A request unanswered this long after its stream was started has an
    /// uncertain outcome. The time a request waits for a free stream (the
    /// server's `SETTINGS_MAX_CONCURRENT_STREAMS`) or a connection is not
    /// counted: the client enforces this itself (see `TransferLoop`).
    public var requestTimeout: Duration
    /// How long connecting (TCP and TLS) may take; at most `requestTimeout`.
    /// A request whose connection was not made in time was never sent.
    public var connectTimeout: Duration
    /// HTTP/2 connections per origin; each carries many streams.
    public var connectionsPerHost: Int
    /// Streams in flight per connection; more requests wait in memory, unsent.
    public var maxStreamsPerConnection: Int
    /// A connection idle this long is replaced before it carries another
    /// request (`CURLOPT_MAXAGE_CONN`); `nil` keeps libcurl's 118 s. An
    /// idle connection can die unseen (a NAT or load balancer that forgot
    /// it), and a request written into it ends uncertain; libcurl 7.88
    /// cannot PING the connections of a multi handle (docs/delivery.md).
    public var maxIdle: Duration?
    /// The nice value of the client's thread (Linux keeps one per thread):
    /// a server whose own API must stay fast while it sends gives this
    /// thread a higher one, so under CPU contention sending slows rather
    /// than answering. 0 keeps the process's.
    public var threadNiceness: Int32 = 0

    public init(name: String, caFile: String? = nil, requestTimeout: Duration = .seconds(10),
                connectTimeout: Duration = .seconds(5), connectionsPerHost: Int = 1, maxStreamsPerConnection: Int = 1000) {
        self.name = name
        self.caFile = caFile
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.connectionsPerHost = connectionsPerHost
        self.maxStreamsPerConnection = maxStreamsPerConnection
    }
}
