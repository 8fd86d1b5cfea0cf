/// Why an `HTTPServer` could not start.
public enum HTTPServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The host is not an IPv4 or IPv6 literal.
    case invalidHost(String)
    /// libmicrohttpd could not bind or listen (address in use, not a local
    /// address, no permission); `reason` is the system's word when known.
    case cannotListen(address: String, reason: String)
    /// `start()` was called on a server that is running or already stopped.
    case alreadyStarted

    public var description: String {
        switch self {
        case .invalidHost(let host):
            return "'\(host)' is not an IPv4 or IPv6 address literal"
        case .cannotListen(let address, let reason):
            return "cannot listen on \(address): \(reason)"
        case .alreadyStarted:
            return "the server was already started or stopped; make a new one"
        }
    }
}
