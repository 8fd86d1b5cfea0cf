import RegistryCore
import Postgres

/// How the delivery queue talks to the database: its writes, each one
/// transaction, and its reads, each one statement.
extension PostgresRegistryStore {
    /// Runs `body` as one READ COMMITTED transaction and returns its value
    /// once COMMIT succeeded (synchronous commit, as every write).
    ///
    /// Why not REPEATABLE READ, as the registry's writes: the queue's rows
    /// are shared by every node (claims of one notification's deliveries
    /// from many nodes, each updating its counts), and there first-updater-
    /// wins would fail one of any two such transactions (40001) where READ
    /// COMMITTED only waits for the other's COMMIT and re-reads the row:
    /// claims lock their rows (`FOR UPDATE SKIP LOCKED`, so nodes never wait
    /// for each other there), counts change by SQL arithmetic on the row as
    /// it is then, and every other statement names its rows by a state that
    /// re-checked after such a wait still holds or excludes the row.
    ///
    /// No user lock and no key barrier: the queue seals nothing, and a claim
    /// only opens the holder's token (reloading the key file once for a key
    /// it does not know, as reads do). Retried: what `PostgresRetry`
    /// retries (23505 when asked: a concurrent enqueue with the same
    /// idempotency key), never a COMMIT of unknown outcome (503).
    func deliveryWriting<T: Sendable>(retryingUniqueViolations: Bool = false,
                                      _ body: @escaping @Sendable (PostgresRecordWriter) throws -> T) async throws -> T {
        let keys = sealingKeys, apps = self.apps, clock = configuration.clock
        let began = ContinuousClock.now
        let report = { [onCommit = configuration.onCommit] (succeeded: Bool) in
            onCommit?(CommitBatchReport(commands: 1, succeeded: succeeded, seconds: (ContinuousClock.now - began).inSeconds))
        }
        let value: T
        do {
            value = try await PostgresRetry(retryingUniqueViolations: retryingUniqueViolations).run {
                try await pool.withConnection { connection in
                    let attempt = {
                        try connection.transaction(isolation: .readCommitted) { connection in
                            try body(PostgresRecordWriter(connection: connection, vault: keys.current, apps: apps, now: clock.now()))
                        }
                    }
                    do {
                        return try attempt()
                    } catch let unknown as UnknownSealingKey
                                where keys.reload(toKnow: unknown.keyID, checks: { try PostgresMeta.verifySealingKeys($0, connection) }) {
                        return try attempt()
                    }
                }
            }
        } catch let error as PostgresError {
            report(false)
            throw RegistryError.unavailable(reason: error.description)
        } catch let unknown as UnknownSealingKey {
            throw unknown.unavailable
        }
        report(true)
        return value
    }

    /// Runs one read statement (or a few that need no common snapshot) on a
    /// pooled connection; a broken connection is replaced and the read run again.
    func deliveryReading<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await translatingErrors {
            try await PostgresRetry().run { try await pool.withConnection(body) }
        }
    }
}
