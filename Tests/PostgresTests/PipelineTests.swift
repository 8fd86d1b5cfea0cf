import Foundation
import Postgres
import Testing

/// `pipeline`, `queryLater` and the held transaction: several statements in
/// one round trip, and what an error in the middle does.
@Suite(.enabled(if: TestServer.isAvailable, TestServer.skipReason))
struct PipelineTests {
    /// A table `name (k int8 primary key, v int8)` with rows k = 1, 2 (v = 0).
    private func makeTable(_ connection: PostgresConnection, _ prefix: String) throws -> String {
        let table = TestServer.uniqueName(prefix)
        try connection.query("CREATE TABLE \(table) (k int8 PRIMARY KEY, v int8 NOT NULL)")
        try connection.query("INSERT INTO \(table) VALUES (1, 0), (2, 0)")
        return table
    }

    private func values(_ connection: PostgresConnection, _ table: String) throws -> [Int64] {
        let result = try connection.query("SELECT v FROM \(table) ORDER BY k")
        return try (0..<result.rowCount).map { try result.int64($0, 0)! }
    }

    private func error(_ outcome: Result<PostgresResult, PostgresError>) -> PostgresError? {
        if case .failure(let error) = outcome { error } else { nil }
    }

    @Test func resultsComeBackInOrderAcrossSegments() throws {
        let connection = try TestServer.connect()
        // Statements with parameters are prepared in the same round trip the
        // first time, and run prepared from then on.
        let sql = "SELECT $1::int8 * 10"
        for _ in 0..<2 {
            let outcomes = try connection.pipeline([
                [PostgresStatement(sql, [1]), PostgresStatement(sql, [2]), PostgresStatement("SELECT 'x'")],
                [PostgresStatement(sql, [3]), PostgresStatement("SELECT $1::text || $2::text", ["a", "b"])],
            ])
            #expect(outcomes.map(\.count) == [3, 2])
            #expect(try outcomes[0][0].get().int64(0, 0) == 10)
            #expect(try outcomes[0][1].get().int64(0, 0) == 20)
            #expect(try outcomes[0][2].get().string(0, 0) == "x")
            #expect(try outcomes[1][0].get().int64(0, 0) == 30)
            #expect(try outcomes[1][1].get().string(0, 0) == "ab")
        }
        #expect(try connection.query("SELECT count(*) FROM pg_prepared_statements").int64(0, 0) == 2)
        #expect(connection.transactionStatus == .idle)
    }

    @Test func anErrorFailsItsStatementSkipsTheRestOfItsSegmentAndLeavesTheConnectionUsable() throws {
        let connection = try TestServer.connect()
        let table = try makeTable(connection, "midpipe")
        let outcomes = try connection.pipeline([
            [PostgresStatement("UPDATE \(table) SET v = 1 WHERE k = $1", [1]),
             PostgresStatement("SELECT 1 / $1::int8", [0]),
             PostgresStatement("UPDATE \(table) SET v = 1 WHERE k = $1", [2])],
            [PostgresStatement("SELECT $1::int8", [7])],
        ])
        #expect(error(outcomes[0][1])?.sqlState == "22012", "division by zero, reported for its own statement")
        #expect(error(outcomes[0][2])?.kind == .pipelineAborted)
        #expect(try outcomes[1][0].get().int64(0, 0) == 7, "the next segment ran")
        // A segment is one implicit transaction: the update before the error rolled back with it.
        #expect(try values(connection, table) == [0, 0])
        #expect(connection.transactionStatus == .idle)
        #expect(!connection.isBroken)
        #expect(try connection.query("SELECT $1::int8 + 1", [41]).int64(0, 0) == 42)
    }

    @Test func aStatementThatCannotBePreparedFailsWithItsOwnErrorAndIsNotRemembered() throws {
        let connection = try TestServer.connect()
        let broken = "SELEC $1::int8"
        for _ in 0..<2 {
            let outcomes = try connection.pipeline([
                [PostgresStatement("SELECT $1::int8", [1]), PostgresStatement(broken, [2])],
                [PostgresStatement("SELECT $1::int8 + 2", [3])],
            ])
            #expect(try outcomes[0][0].get().int64(0, 0) == 1)
            #expect(error(outcomes[0][1])?.sqlState == PostgresError.SQLState.syntaxError)
            #expect(try outcomes[1][0].get().int64(0, 0) == 5)
        }
        #expect { try connection.query(broken, [2]) } throws: {
            ($0 as? PostgresError)?.sqlState == PostgresError.SQLState.syntaxError
        }
        #expect(try connection.query("SELECT $1::int8 * 3", [3]).int64(0, 0) == 9)
    }

    @Test func aUniqueViolationInAPipelineIsOneThatRetriesAreGivenTo() throws {
        let connection = try TestServer.connect()
        let table = try makeTable(connection, "unique")
        let outcomes = try connection.pipeline([[PostgresStatement("INSERT INTO \(table) VALUES ($1, 0)", [1])]])
        let violation = try #require(error(outcomes[0][0]))
        #expect(violation.isUniqueViolation(constraint: "\(table)_pkey"))
        var retry = PostgresRetry(retryingUniqueViolations: true)
        #expect(retry.pause(after: violation) != nil)
    }

    @Test func queuedWritesGoWithTheNextQueryAndTheirErrorIsThrownByIt() throws {
        let connection = try TestServer.connect()
        let table = try makeTable(connection, "later")
        #expect { try connection.queryLater("UPDATE \(table) SET v = 1") } throws: {
            ($0 as? PostgresError)?.kind == .invalidParameter
        }
        try connection.transaction(isolation: .readCommitted) { connection in
            try connection.queryLater("UPDATE \(table) SET v = $1 WHERE k = 1", [5])
            try connection.queryLater("UPDATE \(table) SET v = $1 WHERE k = 2", [6])
            #expect(try values(connection, table) == [5, 6], "sent ahead of the read, in order")
            try connection.queryLater("UPDATE \(table) SET v = $1 WHERE k = 1", [7])
        }
        #expect(try values(connection, table) == [7, 6], "sent with COMMIT")

        let failing = { (connection: PostgresConnection) throws in
            try connection.queryLater("UPDATE \(table) SET v = 8 WHERE k = $1", [1])
            try connection.queryLater("INSERT INTO \(table) VALUES ($1, 0)", [2])
        }
        #expect { try connection.transaction(isolation: .readCommitted) { connection in
            try failing(connection)
            _ = try connection.query("SELECT 1")
        } } throws: { ($0 as? PostgresError)?.isUniqueViolation() == true }
        #expect { try connection.transaction(isolation: .readCommitted, failing) } throws: {
            ($0 as? PostgresError)?.isUniqueViolation() == true
        }
        #expect(try values(connection, table) == [7, 6], "nothing of either transaction committed")
        #expect(connection.transactionStatus == .idle)
    }

    @Test func aConflictOfAQueuedWriteIsASerializationFailure() async throws {
        let connection = try TestServer.connect()
        let table = try makeTable(connection, "conflict")
        let other = try TestServer.connect()
        #expect { try connection.transaction(isolation: .repeatableRead) { connection in
            _ = try values(connection, table)
            try other.query("UPDATE \(table) SET v = 1 WHERE k = 1")
            try connection.queryLater("UPDATE \(table) SET v = 2 WHERE k = $1", [1])
        } } throws: { error in
            guard let error = error as? PostgresError, error.isSerializationFailure else { return false }
            var retry = PostgresRetry()
            return retry.pause(after: error) != nil
        }
        #expect(try values(connection, table) == [1, 0])
        #expect(connection.transactionStatus == .idle)
    }

    @Test func aConnectionLostMidPipelineFailsWhatGotNoAnswer() throws {
        let connection = try TestServer.connect()
        let outcomes = try connection.pipeline([
            [PostgresStatement("SELECT $1::int8", [1])],
            [PostgresStatement("SELECT pg_terminate_backend(pg_backend_pid())")],
            [PostgresStatement("SELECT $1::int8", [3])],
        ])
        #expect(try outcomes[0][0].get().int64(0, 0) == 1)
        #expect(error(outcomes[1][0])?.connectionBroken == true)
        #expect(error(outcomes[2][0])?.kind == .connectionLost)
        #expect(connection.isBroken)
    }

    // MARK: - The held transaction

    /// Takes a session lock before BEGIN and releases it after COMMIT.
    private func lockHold(_ key: Int64) -> PostgresSessionHold {
        PostgresSessionHold(take: PostgresStatement("SELECT pg_try_advisory_lock($1)", [.int64(key)]),
                            release: { taken in
                                (try? taken.bool(0, 0)) == true
                                    ? PostgresStatement("SELECT pg_advisory_unlock($1)", [.int64(key)])
                                    : PostgresStatement("SELECT true")
                            })
    }

    @Test func theHoldIsTakenBeforeTheSnapshotAndReleasedAfterCommit() throws {
        let connection = try TestServer.connect()
        let table = try makeTable(connection, "held")
        let key = PostgresConnection.advisoryKey(TestServer.uniqueName("held"))
        let watcher = try TestServer.connect()
        let seen = try connection.transaction(isolation: .repeatableRead, holding: lockHold(key),
                                              opening: [PostgresStatement("SELECT v FROM \(table) WHERE k = 1")]) {
            connection, held, opened in
            #expect(try held?.bool(0, 0) == true)
            #expect(try watcher.tryAdvisoryLock(key) == false, "held during the transaction")
            // The snapshot was taken by the opening statement: a commit after it is not seen.
            try watcher.query("UPDATE \(table) SET v = 9 WHERE k = 1")
            try connection.queryLater("UPDATE \(table) SET v = v + 1 WHERE k = 2")
            return (try opened.first?.int64(0, 0), try connection.query("SELECT v FROM \(table) WHERE k = 1").int64(0, 0))
        }
        #expect(seen.0 == 0 && seen.1 == 0)
        #expect(try values(connection, table) == [9, 1])
        #expect(try watcher.tryAdvisoryLock(key) == true, "released with COMMIT")
        #expect(!connection.isBroken)
        #expect(connection.transactionStatus == .idle)
    }

    @Test func aBodyThatThrowsRollsBackAndReleases() throws {
        let connection = try TestServer.connect()
        let table = try makeTable(connection, "heldthrow")
        let key = PostgresConnection.advisoryKey(TestServer.uniqueName("heldthrow"))
        #expect(throws: Refused.self) {
            try connection.transaction(isolation: .repeatableRead, holding: lockHold(key), opening: []) { connection, _, _ in
                try connection.queryLater("UPDATE \(table) SET v = 1")
                throw Refused()
            }
        }
        #expect(try values(connection, table) == [0, 0])
        #expect(try TestServer.connect().tryAdvisoryLock(key) == true, "released with ROLLBACK")
        #expect(!connection.isBroken)
    }

    @Test func aQueuedWriteRefusedAtCommitRollsBackAndReleases() throws {
        let connection = try TestServer.connect()
        let table = try makeTable(connection, "heldrefused")
        let key = PostgresConnection.advisoryKey(TestServer.uniqueName("heldrefused"))
        #expect { try connection.transaction(isolation: .repeatableRead, holding: lockHold(key), opening: []) { connection, _, _ in
            try connection.queryLater("UPDATE \(table) SET v = 1 WHERE k = 1")
            try connection.queryLater("INSERT INTO \(table) VALUES ($1, 0)", [2])
        } } throws: { ($0 as? PostgresError)?.isUniqueViolation() == true }
        #expect(try values(connection, table) == [0, 0])
        #expect(try TestServer.connect().tryAdvisoryLock(key) == true)
        #expect(!connection.isBroken)
        #expect(connection.transactionStatus == .idle)
    }

    @Test func aCommitTheServerRefusesRollsBackAndReleases() throws {
        let connection = try TestServer.connect()
        let table = TestServer.uniqueName("heldcommit")
        try connection.query("""
            CREATE TABLE \(table) (k int8 CONSTRAINT \(table)_k UNIQUE DEFERRABLE INITIALLY DEFERRED)
            """)
        defer { _ = try? connection.query("DROP TABLE \(table)") }
        let key = PostgresConnection.advisoryKey(TestServer.uniqueName("heldcommit"))
        // The duplicate is refused by COMMIT itself, which the release follows in the same round trip.
        #expect { try connection.transaction(isolation: .repeatableRead, holding: lockHold(key), opening: []) { connection, _, _ in
            try connection.queryLater("INSERT INTO \(table) VALUES (1), (1)")
        } } throws: { ($0 as? PostgresError)?.isUniqueViolation() == true }
        #expect(try connection.query("SELECT count(*) FROM \(table)").int64(0, 0) == 0)
        #expect(try TestServer.connect().tryAdvisoryLock(key) == true, "released after the refused COMMIT")
        #expect(!connection.isBroken)
        #expect(connection.transactionStatus == .idle)
    }

    @Test func aReleaseThatDoesNotAnswerTrueClosesTheConnectionAfterTheCommit() throws {
        let connection = try TestServer.connect()
        let table = try makeTable(connection, "heldfalse")
        let hold = PostgresSessionHold(take: PostgresStatement("SELECT 1"), release: { _ in PostgresStatement("SELECT false") })
        try connection.transaction(isolation: .readCommitted, holding: hold, opening: []) { connection, _, _ in
            try connection.queryLater("UPDATE \(table) SET v = 1 WHERE k = 1")
        }
        #expect(connection.isBroken, "closed: what the hold took goes with the session")
        #expect(try values(TestServer.connect(), table) == [1, 0], "committed all the same")
    }

    @Test func aSessionEndedBeforeItsCommitRanIsAnErrorThatRetriesNotAnUnknownCommit() throws {
        let connection = try TestServer.connect()
        let table = try makeTable(connection, "heldlost")
        let key = PostgresConnection.advisoryKey(TestServer.uniqueName("heldlost"))
        // The server answers the queued write with its FATAL and ends the
        // session: COMMIT, after it in the same round trip, never ran.
        #expect { try connection.transaction(isolation: .repeatableRead, holding: lockHold(key), opening: []) { connection, _, _ in
            try connection.queryLater("UPDATE \(table) SET v = 1 WHERE k = 1")
            try TestServer.terminate(connection.backendPID)
        } } throws: { error in
            guard let error = error as? PostgresError else { return false }
            return error.sqlState == PostgresError.SQLState.adminShutdown && error.connectionBroken && error.failedBeforeCommit
        }
        #expect(connection.isBroken)
        #expect(try values(TestServer.connect(), table) == [0, 0])
    }
}
