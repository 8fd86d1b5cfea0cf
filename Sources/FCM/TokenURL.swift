import HTTP2

/// A token endpoint's URL split as the transport sends it: its origin and
/// its path (with any query).
package struct TokenURL: Sendable, Hashable {
    package let url: String
    package let origin: String
    package let path: String

    /// The URL split, or why it is not `https://host[:port]/path`.
    package static func parse(_ url: String) -> Result<TokenURL, ServiceAccountError> {
        guard url.lowercased().hasPrefix("https://") else {
            return .failure(ServiceAccountError("the token URL \(url) is not https:// (TLS is required)"))
        }
        let rest = url.dropFirst("https://".count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let origin = "https://" + rest[..<slash]
        if let problem = HTTP2Client.problem(withOrigin: origin) {
            return .failure(ServiceAccountError("the token URL \(url) \(problem)"))
        }
        let path = slash == rest.endIndex ? "/" : String(rest[slash...])
        return .success(TokenURL(url: url, origin: origin, path: path))
    }
}
