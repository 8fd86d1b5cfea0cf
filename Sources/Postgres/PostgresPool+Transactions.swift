extension PostgresPool {
    /// Runs `body` in a transaction (`BEGIN ISOLATION LEVEL …` … `COMMIT`)
    /// on a pooled connection, and returns its value once COMMIT succeeded.
    ///
    /// The whole body runs again, on a fresh attempt, when:
    /// - the server rolled the transaction back for a serialization failure
    ///   (40001) or a deadlock (40P01): up to `maxAttempts` attempts in all,
    ///   waiting a random 0…2ⁿ ms (n the attempt, at most 100 ms) between;
    /// - the connection broke, or turned out to be a read-only standby
    ///   (25006), before COMMIT was sent, or no connection could be opened:
    ///   nothing was committed, so it is run again on a new connection, at
    ///   most twice (after 100–200 ms, then 200–400 ms), so one failover or
    ///   killed connection costs no error but an outage surfaces quickly.
    ///
    /// The body must therefore have no effect outside the database.
    /// Never retried: `.commitOutcomeUnknown` (the connection was lost while
    /// COMMIT was in flight; the caller answers 503 and lets the client
    /// retry with its sequence), `.transactionAborted`, and every other
    /// error, which are thrown as they are.
    @discardableResult
    public func transaction<T: Sendable>(
        isolation: PostgresIsolation = .serializable, maxAttempts: Int = 10,
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        precondition(maxAttempts >= 1)
        var attempt = 0
        var reconnects = 0
        while true {
            attempt += 1
            do {
                return try await withConnection { connection in
                    try connection.transaction(isolation: isolation, body)
                }
            } catch let error as PostgresError where attempt < maxAttempts {
                if error.isSerializationFailure {
                    let ceiling = min(100, 1 << min(attempt, 7))
                    try await Task.sleep(for: .microseconds(Int.random(in: 0...ceiling * 1_000)))
                } else if reconnects < 2, error.failedBeforeCommit {
                    reconnects += 1
                    let base = 100 * (1 << (reconnects - 1))
                    try await Task.sleep(for: .milliseconds(Int.random(in: base...base * 2)))
                } else {
                    throw error
                }
            }
        }
    }

    /// Runs `body` while holding the session-level advisory lock `key`
    /// (`pg_try_advisory_lock`) on one pooled connection, then unlocks it;
    /// `nil`, without running the body, when another session holds it. For
    /// "one at a time across every node" work such as a sweep: the body runs
    /// on the connection's thread and may run several transactions on the
    /// connection it is given while the lock is held. A lost connection
    /// releases the lock on the server by itself.
    @discardableResult
    public func withAdvisoryLock<T: Sendable>(
        _ key: Int64, _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T? {
        try await withConnection { connection in
            guard try connection.tryAdvisoryLock(key) else { return nil }
            defer {
                // An aborted transaction would refuse the unlock; end it first.
                // A lock that cannot be released must not stay with a pooled
                // session: closing the connection releases it (and the pool
                // replaces the connection).
                connection.rollbackQuietly()
                if (try? connection.advisoryUnlock(key)) != true { connection.close() }
            }
            return try body(connection)
        }
    }
}

extension PostgresError {
    /// An error after which nothing of the transaction (or statement) can
    /// have committed and a new connection may succeed: no connection, a
    /// lost one, or a read-only standby (25006) after a failover. A read, or
    /// a transaction whose COMMIT was not sent, may simply run again.
    public var failedBeforeCommit: Bool {
        switch kind {
        case .connectFailed, .connectionLost:
            return true
        case .server:
            return connectionBroken || sqlState == SQLState.readOnlySQLTransaction
        case .commitOutcomeUnknown, .transactionAborted, .decoding, .invalidParameter, .poolClosed, .migrationRefused:
            return false
        }
    }
}
