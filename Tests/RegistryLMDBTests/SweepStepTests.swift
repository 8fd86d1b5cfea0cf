import Foundation
import LMDB
@testable import RegistryCore
@testable import RegistryLMDB
import RegistryTestSupport
import Testing
import TokenSealing

/// The LMDB sweep's bounded steps: batches and time budgets.
struct SweepStepTests {
    @Test func sweepsManyExpiredRecordsInBoundedBatches() async throws {
        let (counts, commits) = try await sweepExpired(devices: 50) { $0.sweepBatchSize = 3 }
        #expect(counts == SweepCounts(devices: 50))
        #expect(commits >= 50 / 3, "each step of 3 is its own commit")
    }

    /// Review of a 1,000,000-device sweep: a step of 1,000 device deletions held the one writer for
    /// 153 ms, so upserts queued behind it waited that long (p99 2.4 s). A step now stops when its
    /// time budget is spent (after at least one entry, so a sweep always progresses).
    @Test func aStepStopsAtItsTimeBudgetAndTheSweepStillFinishes() async throws {
        let (counts, commits) = try await sweepExpired(devices: 20) { c in
            c.sweepBatchSize = 1_000
            c.sweepStepBudget = .zero
        }
        #expect(counts == SweepCounts(devices: 20))
        #expect(commits >= 20, "a zero budget deletes one entry per step")
    }

    /// Registers `devices` devices, lets them expire, sweeps: what was swept, and how many commits that took.
    private func sweepExpired(devices: Int, configure: (inout LMDBRegistryStore.Configuration) -> Void)
        async throws -> (SweepCounts, commits: Int) {
        let commits = Recorder<Int>()
        let f = try makeExpiringStore(on: .lmdb) { c in
            configure(&c)
            c.onCommit = { report in commits.record(report.commands) }
        }
        defer { f.close() }
        let store = f.store
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<devices { group.addTask { try await store.register("u\(i)", "d", token: i) } }
            try await group.waitForAll()
        }
        f.clock.advance(seconds: 11 * 3_600)
        let commitsBefore = commits.all.count
        let counts = try await store.sweep(dryRun: false)
        #expect(try await store.stats().devices == 0)
        return (counts, commits.all.count - commitsBefore)
    }
}
