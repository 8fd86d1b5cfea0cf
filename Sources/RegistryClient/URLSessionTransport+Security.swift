import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLSessionTransport {
    /// A base URL the transport will not send to: not `https`, and not
    /// plain `http` to a loopback host. Requests carry the user's JWT and
    /// push tokens, which must not cross a network in clear.
    public struct InsecureBaseURL: Error, CustomStringConvertible, Sendable {
        public let baseURL: URL

        public var description: String {
            let origin = "\(baseURL.scheme ?? "")://\(baseURL.host ?? "")"
            return "RegistryClient: the registry's base URL must be https (plain http only to localhost, "
                + "127.0.0.0/8 or ::1), got '\(origin)'"
        }
    }

    /// `https` with a host, or `http` to `localhost`, `127.0.0.0/8` or `::1`.
    static func isSecure(_ url: URL) -> Bool {
        guard let host = url.host?.lowercased(), !host.isEmpty else { return false }
        switch url.scheme?.lowercased() {
        case "https": return true
        case "http": return isLoopback(host)
        default: return false
        }
    }

    /// Written out exactly: four decimal octets without leading zeros
    /// (`0127.0.0.1` is octal to some resolvers, so it is not taken for 127).
    static func isLoopback(_ host: String) -> Bool {
        if ["localhost", "::1", "[::1]"].contains(host) { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { octet in
            (1...3).contains(octet.count) && octet.allSatisfy { ("0"..."9").contains($0) }
                && (octet == "0" || octet.first != "0") && Int(octet)! <= 255
        }
    }

    /// The session of every transport made with the default configuration.
    static let sharedSession = makeSession(.default)

    static func makeSession(_ configuration: URLSessionConfiguration) -> URLSession {
        URLSession(configuration: configuration, delegate: RedirectRefusal(), delegateQueue: nil)
    }

    /// Answers every redirect with "do not follow", so the 3xx response is
    /// the request's answer.
    final class RedirectRefusal: NSObject, URLSessionTaskDelegate, Sendable {
        func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
            completionHandler(nil)
        }
    }
}
