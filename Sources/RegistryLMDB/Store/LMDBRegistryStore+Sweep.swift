import Codecs
import RegistryCore
import Foundation
import LMDB

/// The LMDB store's sweep: bounded steps through the expiry index.
extension LMDBRegistryStore {
    /// Both a sweep and a dry run walk the expiry index in bounded steps:
    /// each step is its own short transaction (a write through the writer,
    /// or a read), so neither blocks writers or map growth for long. A
    /// cancelled task (the sweeper stopping at shutdown) ends the sweep
    /// between two steps with `CancellationError`; what was deleted stays
    /// deleted. A sweep leaves the owner entries of what it deletes, and
    /// ends with `OwnerCleanup`'s pass when enough of them wait.
    public func sweep(dryRun: Bool) async throws -> SweepCounts {
        try environment.checkStaleReaders()
        let plan = SweepPlan(now: now, deviceTTL: configuration.limits.deviceTTL, activityTTL: configuration.limits.activityTTL,
                             batchSize: configuration.sweepBatchSize, stepBudget: configuration.sweepStepBudget)
        let schema = self.schema
        var total = SweepCounts()
        var counted = Set<[UInt8]>()
        for kind in SweepPlan.order {
            try await ResumableSteps.run { from in
                let began = ContinuousClock.now
                let counts: SweepCounts
                let resume: [UInt8]?
                if dryRun {
                    (counts, resume) = try reading { read in
                        let (keys, resume) = try plan.entries(kind, read.txn, schema, from: from)
                        return (try plan.count(keys, read, alreadyCounted: &counted), resume)
                    }
                } else {
                    (counts, resume) = try await writing { writer in
                        let (keys, resume) = try plan.entries(kind, writer.txn, schema, from: from)
                        let (counts, stoppedAt) = try plan.delete(keys, writer)
                        return (counts, stoppedAt ?? resume)
                    }
                }
                configuration.onSweepBatch?(SweepBatchReport(dryRun: dryRun, seconds: (ContinuousClock.now - began).inSeconds,
                                                             counts: counts))
                total = total + counts
                return resume
            }
        }
        if !dryRun { try await cleanOwners(OwnerCleanup(schema: schema)) }
        if !dryRun {
            try await writing { writer in
                var w = ByteWriter(version: 1)
                w.timestamp(writer.now)
                try writer.txn.put(w.bytes, for: Schema.MetaKey.lastSweepAt, in: schema.meta)
            }
        }
        return total
    }

    /// `OwnerCleanup`'s pass, chunk after chunk, while it is due: each step
    /// a writer command, reported like a sweep step (with no counts).
    func cleanOwners(_ cleanup: OwnerCleanup) async throws {
        while try reading({ read in try cleanup.isDue(read.txn) }) {
            let (keys, end, batchSize) = try reading { read in
                let (keys, end) = try cleanup.chunk(read.txn)
                return (keys, end, try cleanup.batchSize(keys.count, read.txn))
            }
            try await ResumableSteps.run { from in
                try await timedSweepStep {
                    try await writing { writer in try cleanup.clean(keys, from: from ?? 0, batchSize: batchSize, writer) }
                }
            }
            try await ResumableSteps.run { (_: Bool?) in
                try await timedSweepStep { try await writing { writer in try cleanup.dropLog(before: end, writer.txn) ? true : nil } }
            }
        }
    }

    private func timedSweepStep<T>(_ step: () async throws -> T) async throws -> T {
        let began = ContinuousClock.now
        let result = try await step()
        configuration.onSweepBatch?(SweepBatchReport(dryRun: false, seconds: (ContinuousClock.now - began).inSeconds,
                                                     counts: SweepCounts()))
        return result
    }
}
