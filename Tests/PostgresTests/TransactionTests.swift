import Foundation
import Postgres
import Testing

struct Refused: Error {}

/// `PostgresPool.transaction`: what is retried, what never is.
@Suite(.enabled(if: TestServer.isAvailable, TestServer.skipReason))
struct TransactionTests {
    /// A table `name (k int8 primary key, v int8)` with rows k = 1, 2 (v = 0).
    private func makeTable(_ pool: PostgresPool, _ prefix: String) async throws -> String {
        let table = TestServer.uniqueName(prefix)
        try await pool.withConnection { connection in
            try connection.query("CREATE TABLE \(table) (k int8 PRIMARY KEY, v int8 NOT NULL)")
            try connection.query("INSERT INTO \(table) VALUES (1, 0), (2, 0)")
        }
        return table
    }

    private func values(_ pool: PostgresPool, _ table: String) async throws -> [Int64] {
        try await pool.withConnection { connection in
            let result = try connection.query("SELECT v FROM \(table) ORDER BY k")
            return try (0..<result.rowCount).map { try result.int64($0, 0)! }
        }
    }

    @Test func aSerializationFailureIsRetriedToSuccess() async throws {
        let pool = PostgresPool(connectionString: TestServer.url!, size: 2)
        let table = try await makeTable(pool, "serial")
        let attempts = Shared(0)
        let firstReads = Shared(0)
        // Both read the row, then both update it: under SERIALIZABLE the
        // second writer gets 40001 once the first commits, and is retried.
        let increment: @Sendable (PostgresConnection) throws -> Int64 = { connection in
            let attempt = attempts.increment()
            let before = try connection.query("SELECT v FROM \(table) WHERE k = 1").int64(0, 0)!
            if attempt <= 2 {
                firstReads.increment()
                _ = firstReads.blockUntil(atLeast: 2, timeout: 5)
            }
            try connection.query("UPDATE \(table) SET v = $1 WHERE k = 1", [.int64(before + 1)])
            return before
        }
        async let a = pool.transaction(isolation: .serializable, increment)
        async let b = pool.transaction(isolation: .serializable, increment)
        let seen = try await [a, b].sorted()
        #expect(seen == [0, 1], "the retried body saw the other's committed value")
        #expect(attempts.current == 3)
        #expect(try await values(pool, table) == [2, 0])
        await pool.close()
    }

    @Test func aDeadlockIsRetriedToSuccess() async throws {
        let pool = PostgresPool(connectionString: TestServer.url!, size: 2)
        let table = try await makeTable(pool, "deadlock")
        let attempts = Shared(0)
        let firstLocks = Shared(0)
        // Each locks one row, then wants the other's: the server breaks the cycle with 40P01.
        func body(first: Int64, second: Int64) -> @Sendable (PostgresConnection) throws -> Void {
            { connection in
                let attempt = attempts.increment()
                try connection.query("SET LOCAL deadlock_timeout = '50ms'")
                try connection.query("UPDATE \(table) SET v = v + 1 WHERE k = $1", [.int64(first)])
                if attempt <= 2 {
                    firstLocks.increment()
                    _ = firstLocks.blockUntil(atLeast: 2, timeout: 5)
                }
                try connection.query("UPDATE \(table) SET v = v + 1 WHERE k = $1", [.int64(second)])
            }
        }
        async let a: Void = pool.transaction(isolation: .readCommitted, body(first: 1, second: 2))
        async let b: Void = pool.transaction(isolation: .readCommitted, body(first: 2, second: 1))
        _ = try await (a, b)
        // At least one retry; occasionally both sessions detect the cycle and
        // both are retried (their retries then run without the barrier).
        #expect(attempts.current >= 3)
        #expect(try await values(pool, table) == [2, 2])
        await pool.close()
    }

    @Test func retriesStopAtMaxAttempts() async throws {
        let pool = PostgresPool(connectionString: TestServer.url!, size: 1)
        let attempts = Shared(0)
        await #expect {
            try await pool.transaction(maxAttempts: 3) { connection in
                attempts.increment()
                // Raise a serialization failure by hand.
                try connection.query("DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $$")
            }
        } throws: { ($0 as? PostgresError)?.sqlState == "40001" }
        #expect(attempts.current == 3)
        await pool.close()
    }

    @Test func aConnectionLostWhileCommitIsInFlightIsCommitOutcomeUnknownAndNotRetried() async throws {
        let pool = PostgresPool(connectionString: TestServer.url!, size: 1)
        let table = try await makeTable(pool, "commitlost")
        let attempts = Shared(0)
        do {
            try await pool.transaction { connection in
                attempts.increment()
                try connection.query("UPDATE \(table) SET v = 99 WHERE k = 1")
                // The session dies after the body and before COMMIT is answered.
                try TestServer.terminate(connection.backendPID)
            }
            Issue.record("a transaction whose COMMIT never got an answer reported success")
        } catch let error as PostgresError {
            #expect(error.kind == .commitOutcomeUnknown)
            #expect(error.connectionBroken)
        }
        #expect(attempts.current == 1, "a COMMIT of unknown outcome was retried")
        // (Here the server had not received COMMIT, so nothing committed.)
        #expect(try await values(pool, table) == [0, 0])
        await pool.close()
    }

    @Test func aConnectionLostBeforeCommitIsRetriedOnANewConnection() async throws {
        let pool = PostgresPool(connectionString: TestServer.url!, size: 1)
        let table = try await makeTable(pool, "lostbefore")
        let attempts = Shared(0)
        let pids = try await pool.transaction { connection in
            let attempt = attempts.increment()
            let pid = connection.backendPID
            try connection.query("UPDATE \(table) SET v = v + 1 WHERE k = 1")
            if attempt == 1 { try TestServer.terminate(pid) }
            try connection.query("UPDATE \(table) SET v = v + 1 WHERE k = 2")
            return pid
        }
        #expect(attempts.current == 2)
        #expect(pids != 0)
        #expect(try await values(pool, table) == [1, 1], "the first attempt's update did not survive")
        #expect(pool.connectionsOpened == 2)
        await pool.close()
    }

    @Test func aBodyThatThrowsRollsBackAndIsNotRetried() async throws {
        let pool = PostgresPool(connectionString: TestServer.url!, size: 1)
        let table = try await makeTable(pool, "throws")
        let attempts = Shared(0)
        await #expect(throws: Refused.self) {
            try await pool.transaction { connection in
                attempts.increment()
                try connection.query("UPDATE \(table) SET v = 5")
                throw Refused()
            }
        }
        #expect(attempts.current == 1)
        #expect(try await values(pool, table) == [0, 0])
        await pool.close()
    }

    @Test func aSwallowedErrorMakesCommitFailAsTransactionAborted() async throws {
        let pool = PostgresPool(connectionString: TestServer.url!, size: 1)
        let table = try await makeTable(pool, "swallowed")
        await #expect {
            try await pool.transaction { connection in
                try connection.query("UPDATE \(table) SET v = 5")
                _ = try? connection.query("INSERT INTO \(table) VALUES (1, 1)") // 23505, caught
            }
        } throws: { ($0 as? PostgresError)?.kind == .transactionAborted }
        #expect(try await values(pool, table) == [0, 0])
        await pool.close()
    }

    @Test func anIsolationLevelIsSetForTheTransaction() async throws {
        let pool = PostgresPool(connectionString: TestServer.url!, size: 1)
        for isolation in [PostgresIsolation.readCommitted, .repeatableRead, .serializable] {
            let level = try await pool.transaction(isolation: isolation) { connection in
                try connection.query("SHOW transaction_isolation").string(0, 0)
            }
            #expect(level?.uppercased() == isolation.rawValue)
        }
        await pool.close()
    }
}
