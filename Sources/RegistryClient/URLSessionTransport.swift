import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default transport: `URLSession` against the registry's base URL.
///
/// It sends only where it was pointed: the base URL must be `https` (plain
/// `http` only to this machine, for development and tests), and a redirect
/// is never followed. Following one would send the request again, body and
/// perhaps `Authorization` with it, wherever the answer says; instead the
/// 3xx answer is returned as it came, and the queue treats it as a refusal
/// of that payload (`Outcome.rejected`), not as a failure to retry.
public struct URLSessionTransport: RegistryTransport {
    public let baseURL: URL
    public let session: URLSession
    public let timeout: TimeInterval

    /// `baseURL` may carry a path prefix (`https://api.example.com/registry`);
    /// request paths are appended to it. The timeout is short because a
    /// request that hangs holds up every later one for its session, and a
    /// timed-out write that lands late is refused by its sequence anyway.
    /// The transport makes its own session, whose delegate refuses
    /// redirects (a per-request delegate is not consulted on Linux): one
    /// shared by every transport for the default `configuration`, else a
    /// new one, kept for the process's life.
    public init(baseURL: URL, configuration: URLSessionConfiguration? = nil,
                timeout: TimeInterval = 30) throws(InsecureBaseURL) {
        guard Self.isSecure(baseURL) else { throw InsecureBaseURL(baseURL: baseURL) }
        self.baseURL = baseURL
        session = configuration.map(Self.makeSession) ?? Self.sharedSession
        self.timeout = timeout
    }

    public func send(_ request: RegistryRequest) async throws -> RegistryResponse {
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: base + request.path) else { throw URLError(.badURL) }
        var urlRequest = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        urlRequest.httpBody = request.body
        let (data, response) = try await session.data(for: urlRequest)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        return RegistryResponse(status: http.statusCode, headers: headers, body: data)
    }
}
