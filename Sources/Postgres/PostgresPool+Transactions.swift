extension PostgresPool {
    /// Runs `body` in a transaction (`BEGIN ISOLATION LEVEL …` … `COMMIT`)
    /// on a pooled connection, and returns its value once COMMIT succeeded.
    /// A conflict or a connection lost before COMMIT runs the whole body
    /// again, on a fresh attempt (`PostgresRetry`, at most `maxAttempts`
    /// in all), so it must have no effect outside the database; any other
    /// error, and a COMMIT of unknown outcome, is thrown as it is.
    @discardableResult
    public func transaction<T: Sendable>(
        isolation: PostgresIsolation = .serializable, maxAttempts: Int = 10,
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        try await PostgresRetry(maxAttempts: maxAttempts).run {
            try await withConnection { connection in
                try connection.transaction(isolation: isolation, body)
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
        case .commitOutcomeUnknown, .transactionAborted, .pipelineAborted, .decoding, .invalidParameter, .poolClosed, .migrationRefused:
            return false
        }
    }
}
