import Codecs

/// The HTTP CONNECT proxy every connection of a client goes through (an
/// egress proxy an operator names), with its credentials. Made only by
/// `parse`, so a value is always one libcurl takes as meant.
///
/// Without one, a client connects directly whatever the environment says:
/// libcurl would otherwise take `https_proxy`, `ALL_PROXY` and `NO_PROXY`
/// from the process's environment, so a variable meant for another program
/// could send provider traffic (and its credentials) through a host nobody
/// chose for it.
public struct HTTP2Proxy: Sendable, Equatable, CustomStringConvertible {
    /// `http://host:port` or `https://host:port` (the port always given,
    /// since libcurl's default for a proxy is 1080, not the scheme's), no
    /// credentials: what libcurl's `CURLOPT_PROXY` is given.
    public let url: String
    /// Basic credentials for the proxy, percent-decoded.
    public let username: String?
    let password: String?

    /// The proxy as logs show it: the password as `***`.
    public let description: String

    /// `http://[user[:password]@]host[:port][/]` or the same with
    /// `https://` (TLS to the proxy itself); the port defaults to 80 or 443
    /// as in any URL; `user` and `password` percent-encoded as in any URL
    /// (`%40` for `@`, `%3A` for `:`). A refusal never quotes `text`, which
    /// may hold the password.
    public static func parse(_ text: String) throws(HTTP2ProxyError) -> HTTP2Proxy {
        let lowered = text.lowercased()
        guard let scheme = ["http", "https"].first(where: { lowered.hasPrefix($0 + "://") }) else {
            throw HTTP2ProxyError("must start with http:// or https:// (an HTTP CONNECT proxy)")
        }
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            throw HTTP2ProxyError("must not contain spaces or control characters")
        }
        let rest = text.dropFirst(scheme.count + 3)
        let authority = rest.prefix { !"/?#".contains($0) }
        guard rest.dropFirst(authority.count).allSatisfy({ $0 == "/" }), rest.count - authority.count <= 1 else {
            throw HTTP2ProxyError("must be \(scheme)://[user:password@]host[:port] with no path, query or fragment")
        }
        var username: String?, password: String?, hostPort = authority
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            hostPort = authority[authority.index(after: at)...]
            let colon = userInfo.firstIndex(of: ":")
            guard let user = PercentDecoding.decode(userInfo[..<(colon ?? userInfo.endIndex)]), !user.isEmpty else {
                throw HTTP2ProxyError("has a user that is empty or not percent-encoded")
            }
            username = user
            if let colon {
                guard let decoded = PercentDecoding.decode(userInfo[userInfo.index(after: colon)...]) else {
                    throw HTTP2ProxyError("has a password that is not percent-encoded (%40 for @, %3A for :)")
                }
                password = decoded
            }
        }
        let (host, port) = try hostAndPort(hostPort, defaultPort: scheme == "https" ? 443 : 80)
        let credentials = username.map { "\($0):***@" } ?? ""
        return HTTP2Proxy(url: "\(scheme)://\(host):\(port)", username: username, password: password,
                          description: "\(scheme)://\(credentials)\(host):\(port)")
    }

    /// `host`, `host:port` or `[IPv6]:port`; the host a name or address, the port 1–65535.
    private static func hostAndPort(_ text: Substring, defaultPort: Int) throws(HTTP2ProxyError) -> (String, Int) {
        var host = text, portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw HTTP2ProxyError("has an IPv6 address without its ]") }
            host = text[...close]
            let after = text[text.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { throw HTTP2ProxyError("has text after its IPv6 address") }
            if !after.isEmpty { portText = after.dropFirst() }
            guard host.dropFirst().dropLast().allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }), host.count > 2 else {
                throw HTTP2ProxyError("has an IPv6 address that is not one")
            }
        } else {
            if let colon = text.lastIndex(of: ":") {
                host = text[..<colon]
                portText = text[text.index(after: colon)...]
            }
            guard !host.isEmpty, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }) else {
                throw HTTP2ProxyError("names no host, or a host that is not a name or an address")
            }
        }
        guard let portText else { return (String(host), defaultPort) }
        guard !portText.isEmpty, portText.allSatisfy(\.isASCII), portText.allSatisfy(\.isNumber),
              let port = Int(portText), (1...65535).contains(port) else {
            throw HTTP2ProxyError("has a port that is not from 1 to 65535")
        }
        return (String(host), port)
    }
}

/// Why a proxy URL was refused: what is wrong with it, never the URL itself.
public struct HTTP2ProxyError: Error, Equatable, CustomStringConvertible {
    public let description: String

    init(_ description: String) { self.description = description }
}
