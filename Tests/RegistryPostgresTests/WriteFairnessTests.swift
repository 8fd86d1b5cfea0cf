import Foundation
import Postgres
import Synchronization
@testable import RegistryCore
@testable import RegistryLMDB
@testable import RegistryPostgres
import RegistryTestSupport
import RegistrydTestSupport
import Testing

/// One user cannot starve a PostgreSQL node: a user's writes wait for their
/// turn without holding a pool connection, and past a bound they are
/// refused (503) rather than queued without end.
@Suite(.requiresPostgres) struct WriteFairnessTests {
    /// The hot user's lock is held elsewhere (another node's long write),
    /// and the hot user has 64 writes in flight on this node, whose pool has
    /// 4 connections: every other user's write still goes through while the
    /// lock is held. (When a write waited for its user's lock on a pool
    /// connection, the 64 took every connection and the others waited for
    /// the lock's holder: here, for the forced release after 120 s.)
    @Test func aUserWithManyWritesWaitingNeverHoldsThePool() async throws {
        let f = try makeStore(); defer { f.close() }
        let node = try f.anotherNode(poolSize: 4); defer { node.shutdown() }
        let locker = LockHolder(url: f.databaseURL, user: "hot")
        await offThePool { locker.locked.wait() }
        let hot = Task {
            await withTaskGroup(of: (any Error)?.self) { group in
                for n in 0..<64 {
                    group.addTask {
                        do {
                            try await node.register("hot", "d\(n % 8)", token: 10_000 + n)
                            return nil
                        } catch { return error }
                    }
                }
                return await group.reduce(into: [String]()) { errors, error in if let error { errors.append("\(error)") } }
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        for n in 0..<8 { try await node.register("other\(n)", "phone", token: n) }
        locker.othersDone.signal()
        await offThePool { locker.released.wait() }
        let forced = locker.forced.load(ordering: .sequentiallyConsistent)
        #expect(!forced, "the other users' writes waited for the hot user's lock")
        // Each hot write went through once the lock was free, or gave up waiting for it with a 503.
        let errors = await hot.value
        #expect(errors.allSatisfy { $0.contains("overloaded") }, "\(errors)")
    }

    /// A node holds at most `maxPendingWritesPerUser` of one user's writes;
    /// one more is a 503 (Retry-After), and the user's other writes go on.
    @Test func pastTheBoundAUsersWriteIsRefusedNotQueued() async throws {
        let queue = PostgresWriteQueue(maxPending: 100, maxPerUser: 3)
        try await queue.enter("u")
        for _ in 0..<3 { Task { try await queue.enter("u"); queue.leave("u") } }
        try await Task.sleep(for: .milliseconds(100))
        await #expect(throws: RegistryError.unavailable(reason: "overloaded: one user has 3 writes waiting on this node")) {
            try await queue.enter("u")
        }
        try await queue.enter("v")
        queue.leave("v")
        queue.leave("u")
        let deadline = ContinuousClock.now + .seconds(10)
        while queue.pending > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(queue.pending == 0, "the waiting writes ran in turn")
    }
}

/// Another node's session holding a user's advisory lock (a long write of
/// that user) until the test's other writes are done, or 120 s at most.
/// The cap only stops a broken build from hanging the suite, so it is
/// generous: with the whole suite on two busy cores sharing one PostgreSQL
/// server, eight ordinary writes can take tens of seconds, which says
/// nothing about fairness.
private final class LockHolder: Sendable {
    let locked = DispatchSemaphore(value: 0)
    let othersDone = DispatchSemaphore(value: 0)
    let released = DispatchSemaphore(value: 0)
    /// The 120 s ran out before the other writes were done.
    let forced = Atomic<Bool>(false)

    init(url: String, user: String) {
        Thread { [self] in
            defer { released.signal() }
            guard let session = try? PostgresConnection(url) else {
                locked.signal()
                return
            }
            defer { session.close() }
            let schema = (try? session.query("SELECT current_schema()").string(0, 0)).flatMap { $0 } ?? ""
            let lock = PostgresLocks(schema: schema).user(user)
            _ = try? session.tryAdvisoryLock(lock)
            locked.signal()
            if othersDone.wait(timeout: .now() + 120) == .timedOut { forced.store(true, ordering: .sequentiallyConsistent) }
            _ = try? session.advisoryUnlock(lock)
        }.start()
    }
}
