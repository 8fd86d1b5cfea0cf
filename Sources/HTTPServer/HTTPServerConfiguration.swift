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
    /// Open connections across all threads. libmicrohttpd splits it evenly
    /// over the worker pool, so with several threads one thread may refuse
    /// while another still has room.
    public var connectionLimit: Int = 1024
    /// Open connections per client address; 0 = none.
    public var perIPConnectionLimit: Int = 0
    /// Slow or idle clients are cut off after this many seconds without
    /// traffic. A connection whose request is being handled is exempt.
    public var idleTimeoutSeconds: Int = 30
    /// Request line + headers over this → 431. libmicrohttpd's per-connection
    /// memory is sized at four times this (at least 64 KiB) so that the server,
    /// not libmicrohttpd, answers in the contract's JSON shape; a header block
    /// over that larger size is refused by libmicrohttpd itself with a 431 and
    /// an HTML body.
    public var maxHeaderBytes: Int = 16 * 1024
    /// How long `stop` lets in-flight requests finish before answering the
    /// ones still running 503 itself.
    public var drainTimeoutSeconds: Double = 10

    public init() {}

    /// libmicrohttpd's connection memory pool: headers are parsed in place,
    /// so the pool must hold the largest header block we want to judge.
    var connectionMemoryLimit: Int { max(64 * 1024, maxHeaderBytes * 4) }
}
