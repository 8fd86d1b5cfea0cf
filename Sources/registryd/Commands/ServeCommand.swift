import Foundation
import Glibc
import HTTPServer
import JWT
import Lifecycle
import RegistryCore
import RegistryLMDB
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
/// it has before the environment closes. If an LMDB commit fails (storage
/// unusable), the process exits 1 so its supervisor can restart it: nothing
/// after a failed fsync is trusted.
///
/// With `--store postgres` many servers share one database, so no
/// data-directory lock is taken; a database unreachable at start is retried
/// for `--postgres-startup-timeout`, and one lost while serving is waited
/// out (requests and `/healthz` answer 503 meanwhile; the pool reconnects).
enum ServeCommand: Subcommand {
    static let help = CommandHelp(
        name: "serve", synopsis: "[FLAGS]", tagline: "serve the HTTP API (the default)",
        summary: """
            Serves the HTTP API of docs/api.md on --listen, with the registry in --data-dir (created on
            first start, with generated secrets in DIR/secrets/ unless key files are given), and
            sweeps expired records every --sweep-interval. One server per LMDB data directory:
            a second serve on it exits 2 naming the pid that holds it. SIGTERM or SIGINT drain
            requests in flight and exit 0; a failed LMDB commit (EIO, ENOSPC) exits 1.
            With --store postgres the registry is the database --postgres-url names, and any
            number of servers may serve it: give every one the same --token-key-file,
            --internal-api-key-file, --operator-key-file and JWT key (DIR/secrets then holds only
            what is not given).
            A database unreachable at start is retried for --postgres-startup-timeout, then
            serve exits 1; one lost later answers 503 (also /healthz) until it is back.
            """,
        flags: Flags.serve,
        example: """
            registryd serve --data-dir /var/lib/registryd --listen 0.0.0.0:8080
            {"ts":"2026-12-05T16:20:00.000Z","level":"info","event":"listening","address":"0.0.0.0:8080","store":"lmdb",...}
            registryd serve --store postgres --postgres-url 'postgresql://registry@db1,db2/registry?target_session_attrs=read-write' \\
              --token-key-file /etc/registryd/token-keys --internal-api-key-file /etc/registryd/internal-api.key \\
              --jwt-jwks-file /etc/registryd/jwks.json --listen 0.0.0.0:8080
            """)

    static func run(_ arguments: Arguments) throws -> Int32 {
        let settings = try Settings(arguments)
        let keys = try AuthKeys.configured(settings)
        try settings.refuseSecretFilesOpenToOthers()
        let providers = try settings.delivery.map(DeliverySetup.providers)
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
        // One server per LMDB data directory; held until the process exits.
        // PostgreSQL is shared by design: its servers need no lock.
        var lock: DataDirectoryLock?
        if case .lmdb = settings.backend { lock = try DataDirectoryLock.acquire(settings.layout) }
        defer { withExtendedLifetime(lock) {} }
        let auth = try keys.completed(settings, logger: logger)
        let metrics = RegistryMetrics()
        guard let store = try openStore(settings, metrics: metrics, signals: signals, logger: logger) else { return 0 }
        logUndeclaredApps(store, logger)

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
        var delivery: DeliverySetup?
        if let providers {
            delivery = DeliverySetup(providers, store: store, singleProcess: settings.backend.isSingleProcess,
                                     maxQueued: settings.delivery?.maxQueued ?? NotificationIntake.defaultMaxQueued,
                                     metrics: metrics, logger: logger)
        }
        let application = RegistryApplication(
            store: store,
            authenticator: Authenticator(verifier: JWTVerifier(configuration: auth.jwt), internalAPIKey: auth.internalAPIKey,
                                         operatorKey: auth.operatorKey, clock: SystemClock()),
            metrics: metrics, logger: logger, delivery: delivery?.routes)
        let server = HTTPServer(configuration: settings.server, application: application)
        // The sender stops after the server (no new notification) and before the store (its last settlements).
        let services = ServiceGroup([store, sweeper] + (delivery.map { [$0.sender] } ?? []) + [server])
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
        logger.info("listening", [("address", .string("\(shownHost):\(server.boundPort)"))] + settings.backend.logFields
                    + [("version", .string(Version.current))]
                    + [("dataDir", .string(settings.dataDirectory)), ("maxConnections", .int(Int64(server.connectionLimit))),
                       ("delivery", .string(settings.delivery?.providerNames.joined(separator: ",") ?? "off")),
                       ("apnsTopics", .array((settings.delivery?.apns?.topics.keys.sorted() ?? []).map { .string($0) }))]
                    + (settings.delivery?.proxy.map { [("deliveryProxy", .string($0.description))] } ?? []))

        ServiceManagerNotifier.notify("READY=1\nMAINPID=\(getpid())\nSTATUS=listening on \(shownHost):\(server.boundPort)")

        let status = waitForStop(signals, storeFailed: { store.hasFailedPermanently }, logger: logger)
        ServiceManagerNotifier.notify("STOPPING=1")
        services.stop()
        logger.info("stopped", [("status", .int(Int64(status)))])
        return status
    }

    /// Apps the registry holds records of but `--apps` does not declare
    /// (an app dropped from the list, or one callers created before apps
    /// were declared): their records stay readable by the sender and are
    /// swept, but take no new registration. Logged once, so an operator who
    /// forgot an app in the list sees it at start.
    private static func logUndeclaredApps(_ store: any RegistryStore, _ logger: Logger) {
        switch Blocking.result({ try await store.storedApps() }) {
        case .success(let stored):
            let undeclared = stored.filter { !store.declaredApps.contains($0) }
            guard !undeclared.isEmpty else { return }
            logger.warning("undeclared_apps", [
                ("count", .int(Int64(undeclared.count))),
                ("apps", .array(undeclared.prefix(100).map { .string($0) })),
                ("declared", .array(store.declaredApps.ids.map { .string($0) })),
                ("detail", .string("records of these apps stay readable and are swept, but take no new registration; add an app to --apps to take its registrations again")),
            ])
        case .failure(let error):
            logger.warning("undeclared_apps_unknown", [("error", .string(String(describing: error)))])
        }
    }

    /// Blocks until SIGTERM/SIGINT (exit 0) or `storeFailed` (exit 1): an
    /// LMDB store after a failed commit, which is never retried, so the
    /// process exits for its supervisor. A PostgreSQL outage is transient
    /// (the pool reconnects; a failover finds the new primary): the server
    /// stays up, answering 503 meanwhile.
    private static func waitForStop(_ signals: sigset_t, storeFailed: () -> Bool, logger: Logger) -> Int32 {
        while true {
            if let received = nextSignal(signals, within: .seconds(1)) {
                logger.info("stopping", [("signal", .string(received == SIGTERM ? "SIGTERM" : "SIGINT"))])
                return 0
            }
            if storeFailed() {
                logger.error("storage_unusable", [("action", .string("exiting so the supervisor restarts the process"))])
                return 1
            }
        }
    }

    /// Opens the store. A PostgreSQL database that cannot be reached is tried
    /// again every second (logged) for `--postgres-startup-timeout`: servers
    /// and their database often start together, and a failover takes
    /// seconds. Then the last failure is thrown (exit 1). Returns `nil` when
    /// SIGTERM or SIGINT arrived meanwhile.
    private static func openStore(_ settings: Settings, metrics: RegistryMetrics, signals: sigset_t,
                                  logger: Logger) throws -> (any RegistryMaintenance & Service)? {
        let deadline = ContinuousClock.now + settings.postgresStartupTimeout
        var attempts = 0
        while true {
            attempts += 1
            do {
                return try settings.openStore(.creatingIfMissing, metrics: metrics)
            } catch let failure as Settings.DatabaseFailure where failure.isTransient {
                let left = ContinuousClock.now.duration(to: deadline)
                guard left > .zero else {
                    let tried = "tried \(attempts) times for \(settings.postgresStartupTimeout.components.seconds)s"
                    throw Settings.DatabaseFailure(description: "\(failure.description) (\(tried), --postgres-startup-timeout)",
                                                   isTransient: true)
                }
                logger.warning("store_unreachable", settings.backend.logFields + [
                    ("error", .string(failure.description)), ("attempts", .int(Int64(attempts))),
                    ("retryingForSeconds", .int(left.components.seconds)),
                ])
                ServiceManagerNotifier.notify("STATUS=waiting for the database (attempt \(attempts))")
                if let received = nextSignal(signals, within: .seconds(1)) {
                    logger.info("stopping", [("signal", .string(received == SIGTERM ? "SIGTERM" : "SIGINT"))])
                    return nil
                }
            }
        }
    }

    /// SIGTERM or SIGINT if one arrives within `timeout` (they are blocked,
    /// so only this wait sees them), else `nil`.
    private static func nextSignal(_ signals: sigset_t, within timeout: Duration) -> Int32? {
        var set = signals
        var wait = timespec(tv_sec: Int(timeout.components.seconds),
                            tv_nsec: Int(timeout.components.attoseconds / 1_000_000_000))
        let received = sigtimedwait(&set, nil, &wait)
        return received == SIGTERM || received == SIGINT ? received : nil
    }
}
