import Codecs
import RegistryCore
import Postgres

/// The PostgreSQL store's writes: one transaction each, on a pooled
/// connection, in their user's turn.
extension PostgresRegistryStore {
    /// Runs `body` as one REPEATABLE READ transaction and returns its value
    /// once COMMIT succeeded.
    ///
    /// A write of `user` first waits for its turn on this node
    /// (`PostgresWriteQueue`), holding no connection: a user's writes run
    /// one at a time, so one user with many writes in flight never occupies
    /// the pool. Then, on a connection, its first round trip takes the key
    /// barrier shared and tries the user's session advisory lock, and, after
    /// a sync point (so the server holds them before the transaction
    /// begins), sends BEGIN and the transaction's first statement, which
    /// takes its snapshot: the snapshot sees every earlier write of the user
    /// and of any key rotation. That statement reads the sealing key a
    /// rotation announced: a node whose key is older reloads its key file
    /// first, or refuses to seal (`SealingKeys.forWriting`). When another
    /// session held the user lock (another node's write of the user), the
    /// transaction commits nothing, the connection goes back to the pool and
    /// the write tries again shortly. When the write names the record whose
    /// device the rules read first (`record`), that read goes in the same
    /// round trip, after the key's, in the same snapshot
    /// (`PostgresRecordWriter.device` takes it from there). The last round
    /// trip sends the writer's queued writes, COMMIT and the unlocks.
    ///
    /// Why not SERIALIZABLE: its read locks are page-level on small indexes,
    /// so unrelated users' launch upserts failed each other (tools/ha-test:
    /// about 5% answered 503 after ten retries). The rules need less: the
    /// user lock runs a user's writes (device and activity caps, tombstones,
    /// history) one at a time; what one transaction does to another user's
    /// rows (the one-owner rule deleting a holder, feedback, a sweep) meets
    /// that user's writes on the same rows, which REPEATABLE READ refuses as
    /// a concurrent update (40001); two users claiming a new token at once
    /// meet on the unique owner key (23505). Both run again.
    ///
    /// Retried: what `PostgresRetry` retries, 23505 included, and a user
    /// lock held elsewhere (up to `userLockAttempts` tries). Never retried:
    /// a COMMIT whose outcome is unknown (503; the client's retry with its
    /// sequence settles it).
    package var limits: RegistryLimits { configuration.limits }

    package func writing<T: Sendable>(user: String? = nil, reading record: RecordID? = nil,
                                      _ body: @escaping @Sendable (PostgresRecordWriter) throws -> T) async throws -> T {
        try await queue.enter(user)
        defer { queue.leave(user) }
        let keys = sealingKeys, apps = self.apps, clock = configuration.clock, barrier = locks.keyBarrier
        let began = ContinuousClock.now
        // Metrics see what reached the database: a commit, or a database failure (not a rule's refusal).
        let report = { [onCommit = configuration.onCommit] (succeeded: Bool) in
            onCommit?(CommitBatchReport(commands: 1, succeeded: succeeded, seconds: (ContinuousClock.now - began).inSeconds))
        }
        let hold = Self.hold(barrier: barrier, user: user.map(locks.user))
        let opening = [Self.announcedKeyQuery] + (record.map { [PostgresRecordWriter.deviceRead($0)] } ?? [])
        var userLockTries = 0
        while true {
            let value: T?
            do {
                value = try await PostgresRetry(retryingUniqueViolations: true).run {
                    try await pool.withConnection { connection -> T? in
                        try connection.transaction(isolation: .repeatableRead, holding: hold,
                                                   opening: opening) { connection, held, opened in
                            guard try user == nil || held?.bool(0, 1) == true else { return nil }
                            let announced = opened[0].rowCount == 1 ? try opened[0].bytes(0, 0)?.first : nil
                            let vault = keys.forWriting(announced: announced) { ring in
                                try PostgresMeta.verifySealingKeys(ring, connection)
                            }
                            let writer = PostgresRecordWriter(connection: connection, vault: vault, apps: apps, now: clock.now())
                            if let record { writer.cache.readAhead(record, opened[1]) }
                            return try body(writer)
                        }
                    }
                }
            } catch let error as PostgresError {
                report(false)
                throw RegistryError.unavailable(reason: error.description)
            } catch let unknown as UnknownSealingKey {
                throw unknown.unavailable
            }
            if let value {
                report(true)
                return value
            }
            userLockTries += 1
            guard userLockTries < Self.userLockAttempts else {
                throw RegistryError.unavailable(reason: "overloaded: another node held the user's lock for every try")
            }
            try await Task.sleep(for: .milliseconds(min(32, 1 << min(userLockTries, 5))))
        }
    }

    /// Tries for a user lock another node holds: about 5 s in all.
    static let userLockAttempts = 160

    /// The first statement of every write, sent with its BEGIN; the name a
    /// parameter so that it runs prepared (planning it was a sixth of the
    /// database's time per launch upsert).
    static let announcedKeyQuery = PostgresStatement("SELECT value FROM registry_meta WHERE name = $1",
                                                     [.text(PostgresSchema.Meta.sealingKeyID)])

    /// The key barrier shared and, for a user's write, the user's session
    /// advisory lock tried (one statement, sent before BEGIN in the write's
    /// first round trip), released after COMMIT or ROLLBACK in its last.
    /// The body sees whether the user lock was taken (column 1) and, when
    /// not, commits nothing; the barrier is released all the same. Locks
    /// that cannot be released go with their connection (it is closed and
    /// the pool replaces it).
    private static func hold(barrier: Int64, user: Int64?) -> PostgresSessionHold {
        let releaseBarrier = PostgresStatement("SELECT pg_advisory_unlock_shared($1)", [.int64(barrier)])
        guard let user else {
            return PostgresSessionHold(take: PostgresStatement("SELECT pg_advisory_lock_shared($1)", [.int64(barrier)]),
                                       release: { _ in releaseBarrier })
        }
        return PostgresSessionHold(
            take: PostgresStatement("SELECT pg_advisory_lock_shared($1), pg_try_advisory_lock($2)",
                                    [.int64(barrier), .int64(user)]),
            release: { taken in
                (try? taken.bool(0, 1)) == true
                    ? PostgresStatement("SELECT pg_advisory_unlock_shared($1) AND pg_advisory_unlock($2)",
                                        [.int64(barrier), .int64(user)])
                    : releaseBarrier
            })
    }
}
