import Glibc

/// A listening address parsed from a numeric host literal, ready to hand to
/// libmicrohttpd as `MHD_OPTION_SOCK_ADDR`.
///
/// Only literals are accepted: resolving a name at start would make the
/// bind address depend on DNS, and the configuration says what it means.
struct SocketAddress {
    private var storage = sockaddr_storage()
    /// True for an IPv6 literal; the daemon then needs `MHD_USE_IPv6`.
    let isIPv6: Bool

    init?(host: String, port: UInt16) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr = v4
            isIPv6 = false
            withUnsafeMutableBytes(of: &storage) { target in
                withUnsafeBytes(of: &address) { target.copyMemory(from: $0) }
            }
        } else if inet_pton(AF_INET6, host, &v6) == 1 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            address.sin6_addr = v6
            isIPv6 = true
            withUnsafeMutableBytes(of: &storage) { target in
                withUnsafeBytes(of: &address) { target.copyMemory(from: $0) }
            }
        } else {
            return nil
        }
    }

    /// Calls `body` with the address as a `sockaddr` pointer valid for the call.
    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>) throws -> T) rethrows -> T {
        var copy = storage
        return try withUnsafePointer(to: &copy) {
            try $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body)
        }
    }

    /// "host:port", bracketing IPv6 hosts, for error messages.
    static func display(host: String, port: UInt16) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
