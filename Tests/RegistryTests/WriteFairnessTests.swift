import Foundation
import Postgres
@testable import Registry
import Testing

/// One user cannot starve a PostgreSQL node: a user's writes wait for their
/// turn without holding a pool connection, and past a bound they are
/// refused (503) rather than queued without end.
@Suite(.postgresOnly) struct WriteFairnessTests {
    /// The hot user's lock is held elsewhere (another node's long write),
    /// and the hot user has 64 writes in flight on this node, whose pool has
    /// 4 connections: every other user's write still goes through at once.
    /// (When a write waited for its user's lock on a pool connection, the 64
    /// took every connection and the others waited for the lock's holder.)
    @Test func aUserWithManyWritesWaitingNeverHoldsThePool() async throws {
        let f = try makeStore(); defer { f.close() }
        let node = try f.anotherNode(poolSize: 4); defer { node.shutdown() }
        // Another node's session holds the hot user's lock for 3 s (a long write), then lets go.
        let url = f.databaseURL
        let locked = DispatchSemaphore(value: 0), released = DispatchSemaphore(value: 0)
        Thread {
            defer { released.signal() }
            guard let elsewhere = try? PostgresConnection(url) else {
                locked.signal()
                return
            }
            defer { elsewhere.close() }
            let schema = (try? elsewhere.query("SELECT current_schema()").string(0, 0)).flatMap { $0 } ?? ""
            let hotLock = PostgresLocks(schema: schema).user("hot")
            _ = try? elsewhere.tryAdvisoryLock(hotLock)
            locked.signal()
            Thread.sleep(forTimeInterval: 3)
            _ = try? elsewhere.advisoryUnlock(hotLock)
        }.start()
        await offThePool { locked.wait() }
        let hot = Task {
            await withTaskGroup(of: Bool.self) { group in
                for n in 0..<64 {
                    group.addTask { (try? await node.register("hot", "d\(n % 8)", token: 10_000 + n)) != nil }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        let began = ContinuousClock.now
        for n in 0..<8 { try await node.register("other\(n)", "phone", token: n) }
        let others = ContinuousClock.now - began
        #expect(others < .seconds(2), "8 other users' writes took \(others) while the hot user waited")
        await offThePool { released.wait() }
        let written = await hot.value
        #expect(written == 64, "the hot user's writes go through once the lock is free")
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
        try await Task.sleep(for: .milliseconds(100))
        #expect(queue.pending == 0)
    }
}
