import Foundation
import Glibc
import HTTPServer
import JWT
import Lifecycle
import Registry
import RegistryHTTP

/// `registryd serve`: wires the store, the sweeper and the HTTP server, then
/// waits for SIGTERM/SIGINT.
///
/// Order matters: every flag and key file is validated before anything is
/// written; signals are blocked before any thread starts, so only the main
/// thread's `sigtimedwait` sees them. The services run as one
/// `ServiceGroup`, so shutdown is their start order reversed: the server
/// stops accepting and drains requests in flight (its connection reaper
/// stops after it), the sweeper stops, and the store's writer commits what
/// it has before the environment closes. If a commit fails (storage
/// unusable), the process exits 1 so its supervisor can restart it: nothing
/// after a failed fsync is trusted.
enum ServeCommand: Subcommand {
    static let help = CommandHelp(
        name: "serve", synopsis: "[FLAGS]", tagline: "serve the HTTP API (the default)",
        summary: """
            Serves the HTTP API of API.md on --listen, with the registry in --data-dir (created on
            first start, with generated secrets in DIR/secrets/ unless key files are given), and
            sweeps expired records every --sweep-interval. One server per data directory: a
            second serve on it exits 2 naming the pid that holds it. SIGTERM or SIGINT drain
            requests in flight and exit 0; a failed commit (EIO, ENOSPC) exits 1.
            """,
        flags: Flags.serve,
        example: """
            registryd serve --data-dir /var/lib/registryd --listen 0.0.0.0:8080
            {"level":"info","msg":"listening","address":"0.0.0.0:8080","dataDir":"/var/lib/registryd",...}
            """)

    static func run(_ arguments: Arguments) throws -> Int32 {
        let settings = try Settings(arguments)
        let keys = try AuthKeys.configured(settings)
        let logger = Logger(minimumLevel: settings.logLevel)

        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)

        // Nothing is written (secrets, the environment) before the address is known to be usable.
        do {
            try HTTPServer.probeListen(host: settings.server.host, port: settings.server.port)
        } catch {
            throw Arguments.Failure(description: "--listen: \(error)")
        }
        // One server per data directory; held until the process exits.
        let lock = try DataDirectoryLock.acquire(settings.layout)
        defer { withExtendedLifetime(lock) {} }
        let auth = try keys.completed(settings, logger: logger)
        let metrics = RegistryMetrics()
        let store = try settings.openStore(.creatingIfMissing, metrics: metrics)

        let sweeper = Sweeper(store: store, interval: settings.sweepInterval) { result, seconds in
            metrics.recordSweep(result, seconds: seconds)
            switch result {
            case .success(let counts):
                logger.info("sweep", [("devices", .int(Int64(counts.devices))),
                                      ("pushToStartTokens", .int(Int64(counts.pushToStartTokens))),
                                      ("activityTokens", .int(Int64(counts.activityTokens))),
                                      ("tombstones", .int(Int64(counts.tombstones))),
                                      ("seconds", .string(String(format: "%.3f", seconds)))])
            case .failure(is CancellationError):
                logger.info("sweep_interrupted", [("reason", .string("shutting down")),
                                                  ("seconds", .string(String(format: "%.3f", seconds)))])
            case .failure(let error):
                logger.error("sweep_failed", [("error", .string(String(describing: error)))])
            }
        }
        let application = RegistryApplication(
            store: store,
            authenticator: Authenticator(verifier: JWTVerifier(configuration: auth.jwt),
                                         internalAPIKey: auth.internalAPIKey, clock: SystemClock()),
            metrics: metrics, logger: logger)
        let server = HTTPServer(configuration: settings.server, application: application)
        let services = ServiceGroup([store, sweeper, server])
        do {
            try services.start()
        } catch {
            guard case .failed(let service, let reason) = error, service == server.name else { throw error }
            throw Arguments.Failure(description: "--listen: \(reason)")
        }
        if server.connectionLimit < settings.server.connectionLimit {
            logger.warning("connection_limit_lowered", [("configured", .int(Int64(settings.server.connectionLimit))),
                                                        ("inForce", .int(Int64(server.connectionLimit))),
                                                        ("reason", .string("file descriptor limit (ulimit -n -H)"))])
        }
        let host = settings.server.host
        let shownHost = host.contains(":") ? "[\(host)]" : host
        logger.info("listening", [("address", .string("\(shownHost):\(server.boundPort)")),
                                  ("dataDir", .string(settings.dataDirectory)),
                                  ("maxConnections", .int(Int64(server.connectionLimit)))])

        ServiceManagerNotifier.notify("READY=1\nMAINPID=\(getpid())\nSTATUS=listening on \(shownHost):\(server.boundPort)")

        let status = waitForStop(signals, store: store, logger: logger)
        ServiceManagerNotifier.notify("STOPPING=1")
        services.stop()
        logger.info("stopped", [("status", .int(Int64(status)))])
        return status
    }

    /// Blocks until SIGTERM/SIGINT (exit 0) or the store turns unhealthy (exit 1).
    private static func waitForStop(_ signals: sigset_t, store: LMDBRegistryStore, logger: Logger) -> Int32 {
        var set = signals
        var timeout = timespec(tv_sec: 1, tv_nsec: 0)
        while true {
            let received = sigtimedwait(&set, nil, &timeout)
            if received == SIGTERM || received == SIGINT {
                logger.info("stopping", [("signal", .string(received == SIGTERM ? "SIGTERM" : "SIGINT"))])
                return 0
            }
            if !store.isHealthy {
                logger.error("storage_unusable", [("action", .string("exiting so the supervisor restarts the process"))])
                return 1
            }
        }
    }
}
