import Glibc

extension HTTPServer {
    /// Binds `host:port` once and lets it go, so a caller can learn that an
    /// address cannot be listened on before it writes anything (secrets, a
    /// data directory). Port 0 always succeeds. A race with another process
    /// taking the port between this probe and `start` is still reported by
    /// `start`.
    public static func probeListen(host: String, port: UInt16) throws(HTTPServerError) {
        guard let address = SocketAddress(host: host, port: port) else { throw .invalidHost(host) }
        let fd = socket(address.isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw cannotListen(host, port) }
        defer { close(fd) }
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        let length = socklen_t(address.isIPv6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
        guard address.withSockaddr({ bind(fd, $0, length) }) == 0, listen(fd, 1) == 0 else {
            throw cannotListen(host, port)
        }
    }

    private static func cannotListen(_ host: String, _ port: UInt16) -> HTTPServerError {
        .cannotListen(address: SocketAddress.display(host: host, port: port), reason: String(cString: strerror(errno)))
    }
}
