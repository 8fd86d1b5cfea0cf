import Foundation
import Postgres
import Testing

/// The pool: concurrency over few connections, replacement of broken ones,
/// cancellation and closing.
@Suite(.enabled(if: TestServer.isAvailable, TestServer.skipReason))
struct PoolTests {
    @Test func fiftyConcurrentQueriesShareFourConnections() async throws {
        let pool = PostgresPool(connectionString: TestServer.url!, size: 4)
        let start = ContinuousClock.now
        let pids = try await withThrowingTaskGroup(of: (Int, Int64).self) { group in
            for index in 0..<50 {
                group.addTask {
                    try await pool.withConnection { connection in
                        let result = try connection.query("SELECT pg_backend_pid(), $1::int8, pg_sleep(0.05)",
                                                          [.int64(Int64(index))])
                        return (Int(try result.int64(0, 0)!), try result.int64(0, 1)!)
                    }
                }
            }
            var pids = [Int]()
            var echoed = Set<Int64>()
            for try await (pid, value) in group {
                pids.append(pid)
                echoed.insert(value)
            }
            #expect(echoed == Set(0..<50))
            return pids
        }
        let elapsed = ContinuousClock.now - start
        #expect(pids.count == 50)
        #expect(Set(pids).count <= 4)
        #expect(Set(pids).count >= 2)
        #expect(pool.connectionsOpened <= 4)
        // 50 × 50 ms one at a time would be 2.5 s; four at a time about 0.65 s.
        #expect(elapsed < .seconds(2.4), "50 queries over 4 connections took \(elapsed)")
        await pool.close()
    }

    @Test func waitingQueriesBlockNoConcurrencyThread() async throws {
        // Eight queries each holding a connection thread for 0.6 s: were they
        // blocking the (few) cooperative threads, the detached task below
        // could not run until they finished.
        let pool = PostgresPool(connectionString: TestServer.url!, size: 8)
        let started = Shared(0)
        let queries = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await pool.withConnection { connection in
                            started.increment()
                            try connection.query("SELECT pg_sleep(0.6)")
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        #expect(await started.wait(atLeast: 8))
        let hop = ContinuousClock.now
        for _ in 0..<8 { _ = await Task.detached { 1 }.value }
        let elapsed = ContinuousClock.now - hop
        #expect(elapsed < .milliseconds(300), "eight task hops took \(elapsed) while queries ran")
        try await queries.value
        await pool.close()
    }

    @Test func aConnectionTerminatedWhileIdleIsReplacedBeforeTheNextQuery() async throws {
        let pool = PostgresPool(connectionString: TestServer.url!, size: 1)
        let first = try await pool.withConnection { $0.backendPID }
        try TestServer.terminate(first)
        // The pool notices the close the server sent and reconnects first: no failed query.
        let second = try await pool.withConnection { connection in
            (connection.backendPID, try connection.query("SELECT 41 + 1").int64(0, 0))
        }
        #expect(second.0 != first)
        #expect(second.1 == 42)
        #expect(pool.connectionsOpened == 2)
        await pool.close()
    }

    @Test func aConnectionTerminatedMidQueryFailsThatQueryAndIsReplaced() async throws {
        let pool = PostgresPool(connectionString: TestServer.url!, size: 1)
        let marker = TestServer.uniqueName("sleeper")
        let sleeper = Task {
            try await pool.withConnection { connection in
                try connection.query("SELECT pg_sleep(30) /* \(marker) */")
            }
        }
        let watcher = try TestServer.connect()
        var pid: Int64?
        let deadline = ContinuousClock.now + .seconds(10)
        while pid == nil, ContinuousClock.now < deadline {
            let found = try watcher.query("SELECT pid FROM pg_stat_activity WHERE query LIKE $1 AND pid <> pg_backend_pid()",
                                          [.text("%\(marker)%")])
            if found.rowCount == 1 { pid = try found.int64(0, 0) } else { try await Task.sleep(for: .milliseconds(10)) }
        }
        let victim = try #require(pid)
        try TestServer.terminate(Int32(victim))
        do {
            _ = try await sleeper.value
            Issue.record("a terminated query returned")
        } catch let error as PostgresError {
            #expect(error.connectionBroken)
            #expect(error.sqlState == nil || error.sqlState == PostgresError.SQLState.adminShutdown)
        }
        let next = try await pool.withConnection { connection in
            (connection.backendPID, try connection.query("SELECT 1").int64(0, 0))
        }
        #expect(Int64(next.0) != victim)
        #expect(next.1 == 1)
        #expect(pool.connectionsOpened == 2)
        await pool.close()
    }

    @Test func aTransactionLeftOpenByABodyIsRolledBack() async throws {
        let pool = PostgresPool(connectionString: TestServer.url!, size: 1)
        let table = TestServer.uniqueName("leftopen")
        try await pool.withConnection { try $0.query("CREATE TABLE \(table) (v int8)") }
        try await pool.withConnection { connection in
            try connection.query("BEGIN")
            try connection.query("INSERT INTO \(table) VALUES (1)")
        }
        let (status, count) = try await pool.withConnection { connection in
            (connection.transactionStatus, try connection.query("SELECT count(*) FROM \(table)").int64(0, 0))
        }
        #expect(status == .idle)
        #expect(count == 0)
        try await pool.withConnection { try $0.query("DROP TABLE \(table)") }
        await pool.close()
    }

    @Test func aQueuedCallIsCancelledWithoutRunning() async throws {
        let pool = PostgresPool(connectionString: TestServer.url!, size: 1)
        let busy = Shared(0)
        let ran = Shared(0)
        let holder = Task { try await pool.withConnection { connection in
            busy.increment()
            try connection.query("SELECT pg_sleep(0.5)")
        } }
        #expect(await busy.wait(atLeast: 1))
        let queued = Task { try await pool.withConnection { _ in ran.increment() } }
        try await Task.sleep(for: .milliseconds(50))
        queued.cancel()
        await #expect(throws: CancellationError.self) { try await queued.value }
        try await holder.value
        // The queue is empty again: the next call runs, and the cancelled one never did.
        #expect(try await pool.withConnection { try $0.query("SELECT 7").int64(0, 0) } == 7)
        #expect(ran.current == 0)
        await pool.close()
    }

    @Test func closingFailsQueuedWorkAndClosesTheConnections() async throws {
        let name = TestServer.uniqueName("closing")
        let pool = PostgresPool(connectionString: TestServer.url(adding: "application_name=\(name)"), size: 2)
        let watcher = try TestServer.connect()
        func sessions() throws -> Int64? {
            try watcher.query("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", [.text(name)]).int64(0, 0)
        }
        let busy = Shared(0)
        let running = (0..<2).map { _ in
            Task { try await pool.withConnection { connection in
                busy.increment()
                return try connection.query("SELECT pg_sleep(0.3), 1").int64(0, 1)
            } }
        }
        #expect(await busy.wait(atLeast: 2))
        #expect(try sessions() == 2)
        let queued = Task { try await pool.withConnection { _ in 0 } }
        try await Task.sleep(for: .milliseconds(50))
        await pool.close()
        // Running work finished; queued work failed; later work fails at once.
        for task in running { #expect(try await task.value == 1) }
        await #expect { try await queued.value } throws: { ($0 as? PostgresError)?.kind == .poolClosed }
        await #expect { try await pool.withConnection { _ in 0 } } throws: { ($0 as? PostgresError)?.kind == .poolClosed }
        let deadline = ContinuousClock.now + .seconds(5)
        while try sessions() != 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(try sessions() == 0)
    }

    @Test func anUnreachableServerFailsFastWithConnectFailed() async throws {
        let pool = PostgresPool(connectionString: "postgresql://postgres@127.0.0.1:1/registry?connect_timeout=2", size: 1)
        let start = ContinuousClock.now
        await #expect { try await pool.withConnection { _ in 0 } } throws: { ($0 as? PostgresError)?.kind == .connectFailed }
        // The transaction helper tries twice more on a new connection, then gives up.
        await #expect { try await pool.transaction { _ in 0 } } throws: { ($0 as? PostgresError)?.kind == .connectFailed }
        #expect(ContinuousClock.now - start < .seconds(5))
        #expect(pool.connectionsOpened == 0)
        await pool.close()
    }
}
