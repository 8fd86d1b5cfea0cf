import Foundation

/// Settings for one `HTTPServer`; defaults suit a single small host.
public struct HTTPServerConfiguration: Sendable {
    /// IPv4 or IPv6 literal ("::1"), or "0.0.0.0"; host names are not resolved.
    public var host: String = "127.0.0.1"
    /// 0 = any free port (read `boundPort` after start).
    public var port: UInt16 = 8080
    /// Polling threads (libmicrohttpd's epoll worker pool). Handlers run as
    /// Swift tasks, so this need not grow with the number of slow requests.
    public var threads: Int = ProcessInfo.processInfo.activeProcessorCount
    /// Open connections across all threads (default 10,000; epoll makes a
    /// large number cheap). At `start` the process's soft RLIMIT_NOFILE is
    /// raised toward its hard limit if needed, and the limit is lowered to
    /// what the descriptor limit allows (`HTTPServer.connectionLimit` says
    /// what is in force). libmicrohttpd splits it evenly over the worker
    /// threads, so with several threads one may refuse while another still
    /// has room; at its share a thread stops accepting and new clients wait in
    /// the kernel's listen backlog.
    public var connectionLimit: Int = 10_000
    /// Open connections per client address; 0 = none (the default: behind a
    /// load balancer or NAT every client has the same address). Counted over
    /// all threads; a connection over it is accepted and closed at once.
    public var perIPConnectionLimit: Int = 0
    /// An idle connection (a keep-alive one between requests, or a client
    /// that stops reading its response) is closed after this long without
    /// traffic. Traffic resets it, so it does not stop a client that
    /// trickles: `headerTimeout` and `bodyTimeout` do. A connection whose
    /// request is being handled is exempt; zero = no idle timeout.
    /// libmicrohttpd counts whole seconds, so a fraction rounds up.
    public var idleTimeout: Duration = .seconds(30)
    /// The request line and headers must be complete within this of the
    /// connection's accept, however steadily the bytes come (like nginx's
    /// `client_header_timeout`); a connection that misses it is closed
    /// without an answer. On a keep-alive connection the next head is due
    /// `idleTimeout + headerTimeout` after the previous request ended,
    /// and within `headerTimeout` of its request line. Zero turns it off.
    public var headerTimeout: Duration = .seconds(10)
    /// A request body must be complete within this of the end of its head;
    /// a connection that misses it is closed without an answer. Zero turns it off.
    public var bodyTimeout: Duration = .seconds(30)
    /// Request line + headers over this → 431. libmicrohttpd's per-connection
    /// memory is sized at twice this (at least 32 KiB) so that the server,
    /// not libmicrohttpd, answers in the contract's JSON shape; a header block
    /// over that larger size is refused by libmicrohttpd itself with a 431 and
    /// an HTML body.
    public var maxHeaderBytes: Int = 16 * 1024
    /// How long `stop` lets in-flight requests finish before answering the
    /// ones still running 503 itself.
    public var drainTimeout: Duration = .seconds(10)

    public init() {}

    /// libmicrohttpd's connection memory pool: headers are parsed in place,
    /// so the pool must hold the largest header block we want to judge. No
    /// larger: libmicrohttpd zeroes the whole pool between requests on a
    /// connection, which at 64 KiB was a tenth of a health check's CPU.
    var connectionMemoryLimit: Int { max(32 * 1024, maxHeaderBytes * 2) }

    /// libmicrohttpd's connection timeout, which counts whole seconds:
    /// `idleTimeout` rounded up to a second; 0 = none.
    var connectionTimeoutSeconds: UInt32 {
        guard idleTimeout > .zero else { return 0 }
        let (seconds, attoseconds) = idleTimeout.components
        return UInt32(clamping: attoseconds > 0 ? seconds + 1 : seconds)
    }
}
