/// One schema change: a version (positive, unique) and the SQL that makes
/// it, one or more statements. The SQL runs inside the migration
/// transaction, so it must not contain BEGIN/COMMIT or statements that
/// refuse a transaction block (`CREATE INDEX CONCURRENTLY`, `VACUUM`).
public struct PostgresMigration: Sendable {
    public let version: Int64
    public let sql: String

    public init(version: Int64, sql: String) {
        self.version = version
        self.sql = sql
    }
}

/// Versioned schema migrations, applied at start by every node.
///
/// `apply` runs in one READ COMMITTED transaction: it takes
/// `pg_advisory_xact_lock(lockKey)` first, so nodes starting together take
/// turns, then creates `schema_migrations (version, applied_at)` if absent,
/// runs every migration whose version is not recorded there, in version
/// order, and records each in the same transaction. Either all pending
/// migrations apply or none does; the second node, once it has the lock,
/// sees them recorded and applies nothing. (READ COMMITTED matters: each
/// statement sees what committed before it, including what the previous
/// lock holder committed while this transaction waited for the lock.)
///
/// Unqualified names, `schema_migrations` included, resolve through the
/// connection's `search_path`.
public struct PostgresMigrations: Sendable {
    /// What one `apply` found and did.
    public struct Outcome: Sendable, Equatable {
        /// Versions this call applied, in order (empty when all were there).
        public let applied: [Int64]
        /// Recorded versions this list does not have: the database was
        /// migrated by a newer build. The caller decides whether it may run
        /// on that schema.
        public let unknown: [Int64]
        /// The highest recorded version after the call (0 when none).
        public let current: Int64

        public init(applied: [Int64], unknown: [Int64], current: Int64) {
            self.applied = applied
            self.unknown = unknown
            self.current = current
        }
    }

    /// The default lock key: `advisoryKey("registryd.schema_migrations")`.
    public static let defaultLockKey = PostgresConnection.advisoryKey("registryd.schema_migrations")

    public let migrations: [PostgresMigration]
    public let lockKey: Int64

    /// `migrations` must have positive, strictly increasing versions.
    public init(_ migrations: [PostgresMigration], lockKey: Int64 = PostgresMigrations.defaultLockKey) {
        precondition(migrations.allSatisfy { $0.version > 0 }, "migration versions must be positive")
        precondition(zip(migrations, migrations.dropFirst()).allSatisfy { $0.version < $1.version },
                     "migration versions must be strictly increasing")
        self.migrations = migrations
        self.lockKey = lockKey
    }

    /// Applies what is pending, through the pool's `transaction` (retried
    /// when a connection is lost before COMMIT). A COMMIT of unknown outcome
    /// is retried here too, up to twice: unlike a write, applying is
    /// idempotent (the recorded versions say what committed).
    /// Throws `.migrationRefused` when a pending version is lower than a
    /// recorded one (migrations must be added at the end), and the server's
    /// error when a migration's SQL fails (nothing of the call then stays).
    public func apply(on pool: PostgresPool) async throws -> Outcome {
        var unknownOutcomes = 0
        while true {
            do {
                return try await pool.transaction(isolation: .readCommitted) { connection in
                    try self.applyInTransaction(connection)
                }
            } catch let error as PostgresError where error.kind == .commitOutcomeUnknown && unknownOutcomes < 2 {
                unknownOutcomes += 1
            }
        }
    }

    /// The same on one connection (a command-line tool); no retries.
    public func apply(on connection: PostgresConnection) throws -> Outcome {
        try connection.transaction(isolation: .readCommitted) { try applyInTransaction($0) }
    }

    private func applyInTransaction(_ connection: PostgresConnection) throws -> Outcome {
        try connection.advisoryTransactionLock(lockKey)
        try connection.query("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version bigint PRIMARY KEY,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        let recorded = try connection.query("SELECT version FROM schema_migrations ORDER BY version")
        let done = try Set((0..<recorded.rowCount).map { try recorded.int64($0, 0)! })
        let known = Set(migrations.map(\.version))
        let pending = migrations.filter { !done.contains($0.version) }
        if let first = pending.first, let highest = done.max(), first.version < highest {
            throw PostgresError(kind: .migrationRefused,
                                message: "migration \(first.version) is pending but \(highest) is already applied; "
                                    + "new migrations must come after every applied one")
        }
        for migration in pending {
            try connection.executeScript(migration.sql)
            try connection.query("INSERT INTO schema_migrations (version) VALUES ($1)", [.int64(migration.version)])
        }
        let all = done.union(pending.map(\.version))
        return Outcome(applied: pending.map(\.version), unknown: done.subtracting(known).sorted(),
                       current: all.max() ?? 0)
    }
}
