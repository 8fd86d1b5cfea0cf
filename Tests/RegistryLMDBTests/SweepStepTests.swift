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

    /// With writes waiting for the writer a step takes `sweepBatchSizeUnderLoad`
    /// entries, so the commit those writes share with it stays small; with
    /// none waiting, `sweepBatchSize`.
    @Test func aStepIsSmallerWhileWritesWait() {
        let plan = SweepPlan(now: Timestamp(milliseconds: 0), deviceTTL: .seconds(60), activityTTL: .seconds(60),
                             batchSize: 16, busyBatchSize: 4, stepBudget: .milliseconds(2))
        #expect(plan.stepSize(writesWaiting: 0) == 16)
        #expect(plan.stepSize(writesWaiting: 1) == 4)
        #expect(plan.stepSize(writesWaiting: 500) == 4)
        let capped = SweepPlan(now: Timestamp(milliseconds: 0), deviceTTL: .seconds(60), activityTTL: .seconds(60),
                               batchSize: 2, busyBatchSize: 8, stepBudget: .milliseconds(2))
        #expect(capped.stepSize(writesWaiting: 3) == 2, "never more than an idle step")
    }

    /// A sweep whose first step is batched with 50 writes (queued behind a
    /// command that holds the writer until all are in): that step deletes
    /// one device, the busy size; the next ones, with nothing waiting, the
    /// rest at once. Everything expired goes, none of the live writes.
    @Test func aStepBatchedWithWritesIsSmall() async throws {
        let steps = Recorder<SweepBatchReport>()
        let f = try makeExpiringStore(on: .lmdb) { c in
            c.sweepBatchSize = 1_000
            c.sweepBatchSizeUnderLoad = 1
            c.sweepStepBudget = .seconds(10)
            c.onSweepBatch = { steps.record($0) }
        }
        defer { f.close() }
        let store = f.store, writer = f.lmdb.writer
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<60 { group.addTask { try await store.register("old\(i)", "d", token: i) } }
            try await group.waitForAll()
        }
        f.clock.advance(seconds: 11 * 3_600)
        let release = DispatchSemaphore(value: 0)
        let holding = Recorder<Bool>()
        let counts = try await withThrowingTaskGroup(of: SweepCounts?.self) { group in
            group.addTask {
                try await writer.submit { _ in
                    holding.record(true)
                    release.wait()
                }
                return nil
            }
            while holding.all.isEmpty { try await Task.sleep(for: .milliseconds(1)) }
            group.addTask { try await store.sweep(dryRun: false) }
            while writer.queuedCommands < 1 { try await Task.sleep(for: .milliseconds(1)) }
            for i in 0..<50 { group.addTask { try await store.register("live\(i)", "d", token: 1_000 + i); return nil } }
            while writer.queuedCommands < 51 { try await Task.sleep(for: .milliseconds(1)) }
            release.signal()
            var swept: SweepCounts?
            for try await result in group { if let result { swept = result } }
            return swept
        }
        #expect(counts == SweepCounts(devices: 60))
        #expect(try await store.stats().devices == 50)
        #expect(steps.all.filter { $0.counts.devices > 0 }.map(\.counts.devices) == [1, 59])
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
