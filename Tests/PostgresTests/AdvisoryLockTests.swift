import Foundation
import Postgres
import Testing

/// Session-level advisory locks: one holder at a time across sessions (and nodes).
@Suite(.enabled(if: TestServer.isAvailable, TestServer.skipReason))
struct AdvisoryLockTests {
    @Test func aSecondSessionCannotTakeAHeldLockUntilItIsReleased() throws {
        let key = PostgresConnection.advisoryKey(TestServer.uniqueName("lock"))
        let first = try TestServer.connect()
        let second = try TestServer.connect()
        #expect(try first.tryAdvisoryLock(key))
        #expect(try !second.tryAdvisoryLock(key))
        #expect(try first.advisoryUnlock(key))
        #expect(try second.tryAdvisoryLock(key))
        #expect(try !first.tryAdvisoryLock(key))
        // Unlocking a lock this session does not hold says so.
        #expect(try !first.advisoryUnlock(key))
        // A closed session releases what it held.
        second.close()
        let deadline = ContinuousClock.now + .seconds(5)
        while try !first.tryAdvisoryLock(key) {
            guard ContinuousClock.now < deadline else { Issue.record("lock not released by a closed session"); return }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    @Test func withAdvisoryLockExcludesASecondHolderOnAnotherPool() async throws {
        let key = PostgresConnection.advisoryKey(TestServer.uniqueName("sweeper"))
        let nodeA = PostgresPool(connectionString: TestServer.url!, size: 2)
        let nodeB = PostgresPool(connectionString: TestServer.url!, size: 2)
        let holding = Shared(0)
        let triedWhileHeld = Shared(0)
        let holder = Task {
            try await nodeA.withAdvisoryLock(key) { _ in
                holding.increment()
                _ = triedWhileHeld.blockUntil(atLeast: 1)
                return "A ran"
            }
        }
        #expect(await holding.wait(atLeast: 1))
        // Another node, and another connection of the same node: both refused, bodies not run.
        let ranWhileHeld = Shared(0)
        #expect(try await nodeB.withAdvisoryLock(key) { _ in ranWhileHeld.increment() } == nil)
        #expect(try await nodeA.withAdvisoryLock(key) { _ in ranWhileHeld.increment() } == nil)
        triedWhileHeld.increment()
        #expect(try await holder.value == "A ran")
        #expect(ranWhileHeld.current == 0)
        // Released: the other node takes it now.
        #expect(try await nodeB.withAdvisoryLock(key) { _ in "B ran" } == "B ran")
        await nodeA.close()
        await nodeB.close()
    }

    @Test func aBodyThatThrowsStillReleasesTheLock() async throws {
        let key = PostgresConnection.advisoryKey(TestServer.uniqueName("throwing"))
        let pool = PostgresPool(connectionString: TestServer.url!, size: 1)
        await #expect(throws: Refused.self) {
            try await pool.withAdvisoryLock(key) { connection in
                // Leave an aborted transaction behind too.
                try connection.query("BEGIN")
                _ = try? connection.query("SELECT 1/0")
                throw Refused()
            }
        }
        let other = try TestServer.connect()
        #expect(try other.tryAdvisoryLock(key))
        await pool.close()
    }

    @Test func aTransactionLockIsHeldUntilTheTransactionEnds() async throws {
        let key = PostgresConnection.advisoryKey(TestServer.uniqueName("xact"))
        let pool = PostgresPool(connectionString: TestServer.url!, size: 1)
        let other = try TestServer.connect()
        let inside = Shared(0)
        let checked = Shared(0)
        let transaction = Task {
            try await pool.transaction(isolation: .readCommitted) { connection in
                try connection.advisoryTransactionLock(key)
                inside.increment()
                _ = checked.blockUntil(atLeast: 1)
            }
        }
        #expect(await inside.wait(atLeast: 1))
        #expect(try !other.tryAdvisoryLock(key))
        checked.increment()
        try await transaction.value
        #expect(try other.tryAdvisoryLock(key))
        await pool.close()
    }
}
