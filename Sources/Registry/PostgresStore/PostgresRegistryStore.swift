import Lifecycle
import Postgres
import Synchronization
import TokenSealing

/// The registry on PostgreSQL: the same contract as `LMDBRegistryStore`
/// (the rules are `RecordTransaction+Rules`, shared), for a registry that
/// must survive the loss of a machine (a replicated cluster, e.g. Patroni)
/// or serve from many `registryd` nodes at once.
///
/// - Every write is one transaction on a pooled connection (`PostgresPool`:
///   libpq on dedicated threads, never on a Swift concurrency thread), under
///   its user's advisory lock, retried on conflicts (`writing` says why
///   REPEATABLE READ and when SERIALIZABLE); a 2xx means its COMMIT
///   returned success. A connection lost during COMMIT
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
public final class PostgresRegistryStore: RegistryStore, Service {
    public struct Configuration: Sendable {
        /// A libpq connection string or URI (multi-host allowed).
        public var connectionString: String
        /// The keys tokens are sealed and indexed with; every node must use the same file.
        public var tokenKeys: TokenKeyRing
        /// Reads the key file again (a rotation by another process or node).
        public var reloadTokenKeys: (@Sendable () throws -> TokenKeyRing)?
        /// Connections (and their threads): how many transactions run at once.
        public var poolSize = 16
        // The rules' limits, as `LMDBRegistryStore.Configuration` documents them.
        public var maxDevicesPerUser = 20
        public var maxActivitiesPerDevice = 32
        /// The apps a caller's write may name (`DeclaredApps`).
        public var apps: DeclaredApps = .defaultOnly
        public var maxTombstonesPerUser: Int { 2 * maxDevicesPerUser }
        public var deviceTTL: Duration = .seconds(90 * 86_400)
        public var activityTTL: Duration = .seconds(90 * 86_400)
        /// Records deleted per sweep transaction.
        public var sweepBatchSize = 200
        public var clock: any RegistryClock = SystemClock()
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
    /// How this node learns that a rotation elsewhere announced a new sealing key.
    let keyAnnouncement = KeyAnnouncement()
    /// The advisory lock a sweep holds: one sweep at a time across nodes.
    let sweepLock: Int64

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
        cursorSecret = try PostgresSweep.retrying(connection, isolation: .serializable) { try PostgresMeta.check($0, vault) }
        // Per schema: registries in two schemas of one database sweep independently.
        let schema = try connection.query("SELECT current_schema()").string(0, 0) ?? ""
        sweepLock = PostgresConnection.advisoryKey("registryd.sweep." + schema)
        try PostgresTokenBinding.run(connection, vault, lock: PostgresConnection.advisoryKey("registryd.bind." + schema))
        apps = PostgresAppCatalog(declared: configuration.apps)
        try apps.storeDeclared(connection)
        pool = PostgresPool(connectionString: configuration.connectionString, size: max(1, configuration.poolSize),
                            name: "postgres-store")
    }

    public var name: String { "registry-store" }
    public func start() {}

    /// `shutdown()`.
    public func stop() { shutdown() }

    /// Closes the pool: queued work fails, running work finishes, the
    /// connections close. Idempotent.
    public func shutdown() { pool.shutdown() }

    deinit { pool.shutdown() }

    var now: Timestamp { configuration.clock.now() }

    // MARK: Transactions

    /// Runs `body` as one REPEATABLE READ transaction and returns its value
    /// once COMMIT succeeded.
    ///
    /// Why not SERIALIZABLE: its read locks are page-level on small indexes,
    /// so unrelated users' launch upserts failed each other (tools/ha-test:
    /// about 5% answered 503 after ten retries). The rules need less: with
    /// `user`, the connection first takes that user's session advisory lock,
    /// before BEGIN, so the transaction's snapshot sees every earlier write
    /// of the user and a user's writes (device and activity caps,
    /// tombstones, history) run one at a time. What one transaction does to
    /// another user's rows (the one-owner rule deleting a holder, feedback,
    /// a sweep) meets that user's writes on the same rows, which REPEATABLE
    /// READ refuses as a concurrent update (40001); two users claiming a new
    /// token at once meet on the unique owner key (23505). Both run again.
    ///
    /// Retried: 40001, 40P01, 23505 (ten attempts, jittered pauses), and a
    /// connection that broke before COMMIT was sent (twice). Never retried:
    /// a COMMIT whose outcome is unknown (503; the client's retry with its
    /// sequence settles it).
    func writing<T: Sendable>(user: String? = nil,
                              _ body: @escaping @Sendable (PostgresRecordWriter) throws -> T) async throws -> T {
        let keys = sealingKeys, apps = self.apps, clock = configuration.clock, announcement = keyAnnouncement
        let began = ContinuousClock.now
        // Metrics see what reached the database: a commit, or a database failure (not a rule's refusal).
        let report = { [onCommit = configuration.onCommit] (succeeded: Bool) in
            onCommit?(CommitBatchReport(commands: 1, succeeded: succeeded, seconds: (ContinuousClock.now - began).inSeconds))
        }
        let userLock = user.map { PostgresConnection.advisoryKey("registryd.user." + $0) }
        var attempts = 0, reconnects = 0
        while true {
            attempts += 1
            do {
                let value = try await pool.withConnection { connection in
                    try Self.holding(userLock, connection) {
                        try connection.transaction(isolation: .repeatableRead) { connection in
                            try announcement.follow(connection, keys)
                            return try body(PostgresRecordWriter(connection: connection, vault: keys.current, apps: apps,
                                                                 now: clock.now()))
                        }
                    }
                }
                report(true)
                return value
            } catch let error as PostgresError where (error.isSerializationFailure || error.isUniqueViolation()) && attempts < 10 {
                try await Task.sleep(for: .microseconds(Int.random(in: 0...min(100, 1 << min(attempts, 7)) * 1_000)))
            } catch let error as PostgresError where error.failedBeforeCommit && reconnects < 2 {
                reconnects += 1
                try await Task.sleep(for: .milliseconds(Int.random(in: 100...200) * reconnects))
            } catch let error as PostgresError {
                report(false)
                throw RegistryError.unavailable(reason: error.description)
            } catch let unknown as UnknownSealingKey {
                throw unknown.unavailable
            }
        }
    }

    /// Runs `body` holding the session advisory lock `key` (when given),
    /// taken before and released after it; a lock that cannot be released
    /// goes with its connection (the pool replaces it).
    private static func holding<T>(_ key: Int64?, _ connection: PostgresConnection, _ body: () throws -> T) throws -> T {
        guard let key else { return try body() }
        try connection.query("SELECT pg_advisory_lock($1)", [.int64(key)])
        defer {
            if (try? connection.advisoryUnlock(key)) != true { connection.close() }
        }
        return try body()
    }

    /// A read that finds its connection broken (a failover, a restart) runs
    /// again on a new one, twice at most; reads change nothing.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any RegistryReads) throws -> T) async throws -> T {
        let keys = sealingKeys, apps = self.apps, secret = cursorSecret
        var attempts = 0
        return try await translatingErrors {
            while true {
                attempts += 1
                do {
                    return try await pool.withConnection { connection in
                        do {
                            return try body(PostgresReads(connection: connection, vault: keys.current, apps: apps,
                                                          cursorSecret: secret))
                        } catch let unknown as UnknownSealingKey where keys.reload(toKnow: unknown.keyID) {
                            return try body(PostgresReads(connection: connection, vault: keys.current, apps: apps,
                                                          cursorSecret: secret))
                        }
                    }
                } catch let error as PostgresError where error.failedBeforeCommit && attempts < 3 {
                    try await Task.sleep(for: .milliseconds(50 * attempts))
                }
            }
        }
    }

    public var inlineReads: (any RegistryReads & Sendable)? { nil }

    public var declaredApps: DeclaredApps { apps.declared }

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

/// A rotation (`registryd rotate-token-key`, from any host) records the new
/// sealing key in `registry_meta`; a node looks at most once a second, in
/// a write's transaction, and reloads its key file when the key changed,
/// so within a second of the announcement no node seals under the old key.
final class KeyAnnouncement: Sendable {
    private let lastLook = Mutex<ContinuousClock.Instant?>(nil)

    func follow(_ connection: PostgresConnection, _ keys: SealingKeys) throws {
        let now = ContinuousClock.now
        let due = lastLook.withLock { last in
            guard last.map({ now - $0 >= .seconds(1) }) ?? true else { return false }
            last = now
            return true
        }
        guard due, let announced = try PostgresMeta.value(PostgresSchema.Meta.sealingKeyID, connection)?.first,
              announced != keys.current.ring.currentKeyID else { return }
        keys.reload(toKnow: announced, asCurrent: true)
    }
}
