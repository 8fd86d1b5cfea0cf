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
    /// deleted.
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
        if !dryRun {
            try await writing { writer in
                var w = ByteWriter(version: 1)
                w.timestamp(writer.now)
                try writer.txn.put(w.bytes, for: Schema.MetaKey.lastSweepAt, in: schema.meta)
            }
        }
        return total
    }
}
