import CMicroHTTPD
import Foundation
import Glibc
import Lifecycle
import Synchronization

/// An HTTP/1.1 server over libmicrohttpd that hands complete requests to an
/// `HTTPApplication` as plain values.
///
/// libmicrohttpd runs an epoll worker pool of `threads` threads; each request
/// is parsed and framed there. The application's handler for it runs either
/// inline on that thread (reads) or as a Swift task while the connection is
/// suspended (writes), so slow handlers cost no thread (`RequestHandler`).
/// Limits: HTTP/1.1 and 1.0 only (no TLS, no HTTP/2), one listening address.
///
/// What libmicrohttpd 0.9.75 decides by itself (each pinned by a test):
/// - a non-hex chunk size or a non-numeric `Content-Length`: its own 400
///   with an HTML body, then close; the application is never called;
/// - a header block larger than the connection memory pool (see
///   `HTTPServerConfiguration.maxHeaderBytes`): its own 431, HTML body;
/// - keep-alive: HTTP/1.1 stays open, HTTP/1.0 closes unless it asked for
///   `Connection: keep-alive`; pipelined requests are answered in order;
/// - at `connectionLimit` it stops accepting (extra clients wait in the
///   kernel backlog until a slot frees); over `perIPConnectionLimit` it
///   accepts and closes at once;
/// - its connection timeout is idle-based; the absolute head and body
///   deadlines (`headerTimeout`, `bodyTimeout`) are the server's own
///   (`ConnectionDeadlines`, enforced by a `ConnectionReaper` thread);
/// - `Content-Length` on every response, no body for HEAD.
/// The server's own framing errors (`RequestFraming`) and every other
/// answer it makes are JSON `HTTPResponse.error` bodies.
///
/// Its `ConnectionReaper` is its own: the reaper starts with the daemon and
/// stops after it, since it must cut slow clients for as long as the daemon
/// has connections (during the drain too), and a server used alone must
/// still enforce its deadlines.
public final class HTTPServer: Service {
    /// libmicrohttpd's daemon handle. Sendable by contract: the calls made
    /// on it (quiesce, stop, info) are documented safe from any thread, and
    /// `phase` serialises start against stop.
    private struct Daemon: @unchecked Sendable {
        let raw: OpaquePointer
    }

    private enum Phase {
        case idle
        case running(Daemon)
        case stopped
    }

    private let core: ServerCore
    private let phase = Mutex<Phase>(.idle)
    private let port = Atomic<UInt16>(0)
    private let limit = Atomic<Int>(0)

    public init(configuration: HTTPServerConfiguration, application: any HTTPApplication) {
        core = ServerCore(application: application, configuration: configuration)
    }

    deinit {
        stop()
    }

    public var name: String { "http-server" }

    /// Binds and starts serving. Throws `HTTPServerError` naming the address
    /// when the host is not a literal or the address cannot be listened on.
    public func start() throws {
        let configuration = core.configuration
        try phase.withLock { phase in
            guard case .idle = phase else { throw HTTPServerError.alreadyStarted }
            guard let address = SocketAddress(host: configuration.host, port: configuration.port) else {
                throw HTTPServerError.invalidHost(configuration.host)
            }
            var flags = MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            if address.isIPv6 { flags |= MHD_USE_IPv6.rawValue }
            let cls = Unmanaged.passUnretained(core).toOpaque()
            let connectionLimit = FileDescriptorBudget.fit(configuration.connectionLimit)
            errno = 0
            let started = address.withSockaddr { sockaddr in
                registryd_mhd_start(UInt32(flags), configuration.port, sockaddr,
                                    accessRequest, requestCompleted, connectionChanged, requestStarted, cls,
                                    UInt32(clamping: configuration.threads),
                                    UInt32(clamping: connectionLimit),
                                    UInt32(clamping: configuration.perIPConnectionLimit),
                                    configuration.connectionTimeoutSeconds,
                                    configuration.connectionMemoryLimit)
            }
            guard let started else {
                let reason = errno == 0 ? "libmicrohttpd could not start" : String(cString: strerror(errno))
                throw HTTPServerError.cannotListen(
                    address: SocketAddress.display(host: configuration.host, port: configuration.port), reason: reason)
            }
            port.store(registryd_mhd_bound_port(started), ordering: .releasing)
            limit.store(connectionLimit, ordering: .releasing)
            core.reaper.start()
            phase = .running(Daemon(raw: started))
        }
    }

    /// The port actually listened on (the chosen one when configured with 0); 0 before `start`.
    public var boundPort: UInt16 { port.load(ordering: .acquiring) }

    /// Open client connections, idle keep-alive ones included.
    public var activeConnections: Int { core.connections.load(ordering: .relaxed) }

    /// The connection limit in force: `configuration.connectionLimit`, or
    /// less when the file descriptor limit (RLIMIT_NOFILE, after raising the
    /// soft limit toward the hard one) holds fewer; 0 before `start`.
    public var connectionLimit: Int { limit.load(ordering: .acquiring) }

    /// Connections closed because they missed their head or body deadline.
    public var connectionsCutAtDeadline: Int { core.reaper.cutCount }

    /// Connections in the reaper's table (STARTED and not yet CLOSED).
    var trackedConnections: Int { core.reaper.trackedCount }

    /// Requests begun and not yet reported complete; `stop` drains this to zero.
    var liveRequests: Int { core.liveRequests.load(ordering: .relaxed) }

    /// Graceful stop: stop accepting (MHD_quiesce_daemon), let in-flight
    /// requests finish (bounded wait, `drainTimeout`), close idle keep-alive
    /// connections, stop the daemon. Idempotent.
    ///
    /// Meanwhile a request arriving on an open connection is answered 503
    /// `unavailable` with `Retry-After` (`HTTPResponse.retryAfterSeconds`) and closed. Connections made after
    /// the quiesce wait in the kernel's backlog and are reset when the
    /// listening socket closes. Handlers still running at the deadline are
    /// answered 503 for; their tasks run on but their answers are dropped.
    public func stop() {
        let daemon = phase.withLock { phase -> Daemon? in
            guard case .running(let daemon) = phase else {
                phase = .stopped
                return nil
            }
            phase = .stopped
            return daemon
        }
        guard let daemon else { return }
        core.stopping.store(true, ordering: .releasing)
        let listener = MHD_quiesce_daemon(daemon.raw)
        waitForLiveRequests(until: .now + core.configuration.drainTimeout)
        core.abandonRunningHandlers()
        waitForLiveRequests(until: .now + .seconds(1))
        MHD_stop_daemon(daemon.raw)
        core.reaper.stop()
        if listener >= 0 { close(listener) }
    }

    private func waitForLiveRequests(until deadline: ContinuousClock.Instant) {
        while liveRequests > 0, ContinuousClock.now < deadline {
            usleep(5_000)
        }
    }
}
