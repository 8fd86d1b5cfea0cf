import RegistryCore
import Postgres

/// The sweep on PostgreSQL (the writes are `RuleStore`'s, over `writing`).
extension PostgresRegistryStore {
    // MARK: Sweep

    /// Deletes what expired in transactions of at most `sweepBatchSize`
    /// records each (devices with their tokens, then tombstones, activity
    /// tokens, history), under the sweep's advisory lock: while one node
    /// sweeps, another node's sweep finds the lock taken and returns zero
    /// counts at once. A dry run counts without the lock. Cancellation is
    /// checked between two transactions.
    public func sweep(dryRun: Bool) async throws -> SweepCounts {
        let plan = PostgresSweep(now: now, deviceTTL: configuration.limits.deviceTTL, activityTTL: configuration.limits.activityTTL,
                                 batchSize: configuration.sweepBatchSize, onBatch: configuration.onSweepBatch)
        if dryRun {
            return try await translatingErrors { try await pool.withConnection { try plan.count($0) } }
        }
        let cancelled = CancelFlag()
        let keys = sealingKeys, apps = self.apps, clock = configuration.clock
        let counts = try await withTaskCancellationHandler {
            try await translatingErrors {
                try await pool.withAdvisoryLock(locks.sweep) { connection in
                    try plan.run(connection, cancelled: cancelled) {
                        PostgresRecordWriter(connection: connection, vault: keys.current, apps: apps, now: clock.now())
                    }
                }
            }
        } onCancel: {
            cancelled.set()
        }
        if cancelled.isSet { throw CancellationError() }
        return counts ?? SweepCounts()
    }
}
