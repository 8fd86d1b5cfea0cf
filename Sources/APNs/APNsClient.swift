import HTTP2
import JSON

/// APNs's provider API over the shared HTTP/2 transport: `POST
/// /3/device/{token}` on each environment's host, one long-lived connection
/// per environment (or `connectionsPerHost`) with many streams in flight.
/// Every request carries the current provider token of its host's key
/// (`ProviderTokens`), read when its stream starts. Results keep
/// `HTTP2Result`'s at-most-once kinds; the caller decides what to retry.
public final class APNsClient: Sendable {
    public var name: String { http.name }
    let configuration: APNsClientConfiguration
    /// The provider tokens of each host's key.
    private let tokens: [APNsHost: ProviderTokens]
    let http: HTTP2Client
    /// `https://host:port` per environment.
    private let origins: [APNsHost: String]

    /// Checks the configuration: both base URLs `https://` with a host, the
    /// CA file readable, positive limits, a libcurl with HTTP/2.
    /// - Parameter sandboxTokens: those of a key of its own for the sandbox
    ///   host (`--apns-sandbox-key-file`: a key that production refuses as
    ///   `BadEnvironmentKeyInToken`, or the other way round); `tokens` serve
    ///   both hosts without one.
    public init(configuration: APNsClientConfiguration, tokens: ProviderTokens,
                sandboxTokens: ProviderTokens? = nil) throws(APNsClientError) {
        for host in APNsHost.allCases {
            let url = configuration.baseURL(host)
            if let problem = HTTP2Client.problem(withOrigin: url) {
                throw APNsClientError(message: "the APNs \(host.rawValue) URL \(url) \(problem)")
            }
        }
        do {
            http = try HTTP2Client(configuration: configuration.http)
        } catch {
            throw APNsClientError(message: error.message)
        }
        self.configuration = configuration
        self.tokens = [.production: tokens, .sandbox: sandboxTokens ?? tokens]
        origins = Dictionary(uniqueKeysWithValues: APNsHost.allCases.map { host in
            (host, HTTP2Client.trimmedOrigin(configuration.baseURL(host)))
        })
    }

    /// The provider tokens requests to `host` carry.
    public func tokens(for host: APNsHost) -> ProviderTokens { tokens[host]! }

    /// How many times a provider token was renewed, over every key.
    public var credentialRenewals: Int {
        let production = tokens[.production]!, sandbox = tokens[.sandbox]!
        return production.renewals + (sandbox === production ? 0 : sandbox.renewals)
    }

    /// Starts the transport's thread. Only the first call does anything, and none after `stop`.
    public func start() { http.start() }

    /// `stop(grace:)` with the request timeout as grace.
    public func stop() { http.stop() }

    /// Stops in order (`HTTP2Client.stop(grace:)`): requests in flight get
    /// until `grace`, then are `uncertain` (or `notSent` when never written).
    public func stop(grace: Duration) { http.stop(grace: grace) }

    /// Sends `request`, awaiting APNs's answer.
    public func send(_ request: APNsRequest) async -> APNsResult {
        if let invalidity = request.invalidity { return .notSent("invalid request: \(invalidity)") }
        let hostTokens = tokens(for: request.host)
        var headers = [
            "apns-topic: \(request.topic)",
            "apns-push-type: \(request.pushType)",
            "apns-priority: \(request.priority)",
            "apns-expiration: \(request.expiration)",
            "apns-id: \(request.apnsId)",
        ]
        if let collapseId = request.collapseId { headers.append("apns-collapse-id: \(collapseId)") }
        let http = HTTP2Request(origin: origins[request.host]!, path: "/3/device/" + request.deviceToken, headers: headers,
                                authorization: { "bearer " + hostTokens.current() }, body: request.payload,
                                responseHeaders: APNsAnswer.keptHeaders)
        return APNsResult(await self.http.send(http))
    }
}

extension APNsResult {
    init(_ result: HTTP2Result) {
        switch result {
        case .answered(let response): self = .answered(APNsAnswer(response))
        case .notSent(let why): self = .notSent(why)
        case .refused(let why): self = .refused(why)
        case .uncertain(let why): self = .uncertain(why)
        }
    }
}

extension APNsAnswer {
    /// The answer headers APNs's rules read.
    static let keptHeaders: Set<String> = ["apns-id", "retry-after", "apns-unique-id"]

    init(_ response: HTTP2Response) {
        let (reason, timestamp) = Self.parseError(response.body)
        let token = response.authorization.hasPrefix("bearer ") ? String(response.authorization.dropFirst(7)) : response.authorization
        self.init(status: response.status, apnsId: response.headers["apns-id"], reason: reason, timestamp: timestamp,
                  retryAfter: response.headers["retry-after"].flatMap { Int($0) }, latency: response.latency,
                  providerToken: token, uniqueId: response.headers["apns-unique-id"])
    }

    /// `reason` and `timestamp` of an APNs error body `{"reason": …, "timestamp": …}`.
    public static func parseError(_ body: [UInt8]) -> (reason: String?, timestamp: Int64?) {
        guard !body.isEmpty, case .object(let object)? = try? JSONParser.parse(body) else { return (nil, nil) }
        let reason: String? = if case .string(let text)? = object["reason"] { text } else { nil }
        return (reason, object["timestamp"]?.exactInt64)
    }
}
