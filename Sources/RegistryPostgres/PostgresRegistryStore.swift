import RegistryCore
import Lifecycle
import Postgres
import Synchronization
import TokenSealing

/// The registry on PostgreSQL: the same contract as `LMDBRegistryStore`
/// (the rules are `RecordTransaction+Rules`, shared), for a registry that
/// must survive the loss of a machine (a replicated cluster, e.g. Patroni)
/// or serve from many `registryd` nodes at once.
///
/// - Every write is one REPEATABLE READ transaction on a pooled connection
///   (`PostgresPool`: libpq on dedicated threads, never on a Swift
///   concurrency thread), run in its user's turn (`PostgresWriteQueue`)
///   while holding the user's advisory lock, which it only tries; retried
///   on conflicts (`writing` says why not SERIALIZABLE); a 2xx means its
///   COMMIT returned success. A connection lost during COMMIT
///   is `RegistryError.unavailable` (503): the outcome is unknown, and the
///   client's retry with the same sequence settles it.
/// - Reads are one statement each, on a pooled connection.
/// - No state goes stale between nodes: the cursor secret and the key
///   checks live in `registry_meta`; a node caches only apps it saw
///   committed (apps are never removed). Each node puts the apps it is
///   given (`--apps`) into `registry_apps` at open.
/// - One sweep at a time across nodes (a session advisory lock).
/// - After a failover the pool reconnects by itself (a multi-host URL with
///   `target_session_attrs=read-write` finds the new primary).
public final class PostgresRegistryStore: RuleStore, Service {
    public struct Configuration: Sendable {
        /// A libpq connection string or URI (multi-host allowed).
        public var connectionString: String
        /// The keys tokens are sealed and indexed with; every node must use the same file.
        public var tokenKeys: TokenKeyRing
        /// Reads the key file again (a rotation by another process or node).
        public var reloadTokenKeys: (@Sendable () throws -> TokenKeyRing)?
        /// Connections (and their threads): how many transactions run at once.
        public var poolSize = 16
        /// The rules' limits: caps, TTLs, declared apps.
        public var limits = RegistryLimits()
        /// Records deleted per sweep transaction.
        public var sweepBatchSize = 200
        /// Writes this node holds at once (running or waiting); one more
        /// answers 503 with Retry-After rather than queueing without bound.
        public var maxPendingWrites = 4_096
        /// Writes of one user this node holds at once: a user's writes run
        /// one at a time (their rules need it), waiting without a connection,
        /// so one user with many writes in flight queues behind themself
        /// and never holds the pool; past this many, 503.
        public var maxPendingWritesPerUser = 64
        public var clock: any WallClock = SystemClock()
        /// Called after each write transaction, committed or not (metrics:
        /// one transaction is a batch of one command).
        public var onCommit: (@Sendable (CommitBatchReport) -> Void)?
        public var onSweepBatch: (@Sendable (SweepBatchReport) -> Void)?

        public init(connectionString: String, tokenKeys: TokenKeyRing) {
            self.connectionString = connectionString
            self.tokenKeys = tokenKeys
        }
    }

    let configuration: Configuration
    let pool: PostgresPool
    let apps: PostgresAppCatalog
    let sealingKeys: SealingKeys
    let cursorSecret: [UInt8]
    /// The advisory locks of this registry (per schema: registries in two
    /// schemas of one database lock independently).
    let locks: PostgresLocks
    /// Holds writes waiting for their turn (per user) without a connection.
    let queue: PostgresWriteQueue
    /// This node's row in `registry_nodes`, kept by `heartbeat` once `start()` ran.
    let node = PostgresNode()

    /// Connects, applies pending schema migrations (under an advisory lock,
    /// once across nodes starting together), checks the token keys against
    /// the registry, and starts the pool. It blocks while it talks to the
    /// database: call it at start-up (a command's main thread), not from a
    /// request. Throws `RegistryOpenError` for a database migrated by a newer
    /// build or other token keys, and `PostgresError` when it cannot connect.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        sealingKeys = SealingKeys(configuration.tokenKeys, reload: configuration.reloadTokenKeys)
        let connection = try PostgresConnection(configuration.connectionString)
        defer { connection.close() }
        let outcome = try PostgresSchema.migrations.apply(on: connection)
        if let newest = outcome.unknown.max() {
            throw RegistryOpenError.schemaMismatch(found: UInt64(newest), expected: UInt64(PostgresSchema.version))
        }
        let vault = sealingKeys.current
        // SERIALIZABLE: nodes starting together insert the same meta rows; one commits, the other sees them.
        cursorSecret = try connection.retryingTransaction(isolation: .serializable) { try PostgresMeta.check($0, vault) }
        locks = PostgresLocks(schema: try connection.query("SELECT current_schema()").string(0, 0) ?? "")
        try PostgresTokenBinding.run(connection, vault, lock: locks.binding)
        queue = PostgresWriteQueue(maxPending: configuration.maxPendingWrites,
                                   maxPerUser: configuration.maxPendingWritesPerUser)
        apps = PostgresAppCatalog(declared: configuration.limits.apps)
        try apps.storeDeclared(connection)
        pool = PostgresPool(connectionString: configuration.connectionString, size: max(1, configuration.poolSize),
                            name: "postgres-store")
    }

    public var name: String { "registry-store" }

    /// The registry's counts without its token keys (they open no token):
    /// `registryd stats` where the key file is missing. Changes nothing,
    /// and refuses a database this build has not migrated.
    public static func statsWithoutTokenKeys(connectionString: String) throws -> StoreStats {
        let connection = try PostgresConnection(connectionString)
        defer { connection.close() }
        let version = try connection.query("SELECT coalesce(max(version), 0) FROM schema_migrations").int64(0, 0) ?? 0
        guard version == PostgresSchema.version else {
            throw RegistryOpenError.schemaMismatch(found: UInt64(max(0, version)), expected: UInt64(PostgresSchema.version))
        }
        return try PostgresReads.stats(connection)
    }

    /// Makes this store a node of the registry (`serve`): it records itself
    /// and the sealing keys it holds in `registry_nodes`, and follows a
    /// rotation's announcement, once a second (`heartbeat`).
    public func start() {
        node.heartbeat.start(runningFirst: true) { [weak self] in self?.heartbeat() }
    }

    /// `shutdown()`.
    public func stop() { shutdown() }

    /// Stops the heartbeat (removing this node's row), then closes the pool:
    /// queued work fails, running work finishes, the connections close.
    /// Idempotent.
    public func shutdown() {
        if node.heartbeat.stop() { leave() }
        pool.shutdown()
    }

    deinit { pool.shutdown() }

    var now: Timestamp { configuration.clock.now() }

    // MARK: Reads

    /// A read that finds its connection broken (a failover, a restart) runs
    /// again on a new one (`PostgresRetry`); reads change nothing.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any RegistryReads) throws -> T) async throws -> T {
        let keys = sealingKeys, apps = self.apps, secret = cursorSecret
        return try await translatingErrors {
            try await PostgresRetry().run {
                try await pool.withConnection { connection in
                    do {
                        return try body(PostgresReads(connection: connection, vault: keys.current, apps: apps,
                                                      cursorSecret: secret))
                    } catch let unknown as UnknownSealingKey
                                where keys.reload(toKnow: unknown.keyID, checks: { try PostgresMeta.verifySealingKeys($0, connection) }) {
                        return try body(PostgresReads(connection: connection, vault: keys.current, apps: apps,
                                                      cursorSecret: secret))
                    }
                }
            }
        }
    }

    public var inlineReads: (any RegistryReads & Sendable)? { nil }


    /// Database failures in the contract's terms: `unavailable` (503),
    /// including a COMMIT whose outcome is unknown, and a token under a key
    /// this node's key file lacks.
    func translatingErrors<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as PostgresError {
            throw RegistryError.unavailable(reason: error.description)
        } catch let unknown as UnknownSealingKey {
            throw unknown.unavailable
        }
    }
}
