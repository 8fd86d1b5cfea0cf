import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default transport: `URLSession` against the registry's base URL.
public struct URLSessionTransport: RegistryTransport {
    public let baseURL: URL
    public let session: URLSession
    public let timeout: TimeInterval

    /// `baseURL` may carry a path prefix (`https://api.example.com/registry`);
    /// request paths are appended to it. The timeout is short because a
    /// request that hangs holds up every later one for its session, and a
    /// timed-out write that lands late is refused by its sequence anyway.
    public init(baseURL: URL, session: URLSession = .shared, timeout: TimeInterval = 30) {
        self.baseURL = baseURL
        self.session = session
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
