import Codecs
import RegistryCore
import Foundation
import Postgres
import Synchronization

/// One sweep of the PostgreSQL store: the cutoffs, fixed when it starts,
/// and bounded transactions over the expiry indexes (`last_seen_at`,
/// `updated_at` of activity tokens, `deleted_at`, history `at`), so a
/// sweep never holds rows locked for long. Expired means at or before the
/// cutoff, as in the LMDB store's `SweepPlan`, and in the same order:
/// devices (with their tokens, `expired` events), tombstones, activity
/// tokens, history.
struct PostgresSweep: Sendable {
    let deviceCutoff: Timestamp
    let activityCutoff: Timestamp
    let batchSize: Int
    let onBatch: (@Sendable (SweepBatchReport) -> Void)?

    init(now: Timestamp, deviceTTL: Duration, activityTTL: Duration, batchSize: Int,
         onBatch: (@Sendable (SweepBatchReport) -> Void)?) {
        deviceCutoff = now.subtracting(deviceTTL)
        activityCutoff = now.subtracting(activityTTL)
        self.batchSize = max(1, batchSize)
        self.onBatch = onBatch
    }

    /// What a sweep now would delete, counted in one statement.
    func count(_ connection: PostgresConnection) throws -> SweepCounts {
        let r = try connection.query("""
            WITH gone AS (SELECT user_id, app_id, device_id FROM registry_devices WHERE last_seen_at <= $1)
            SELECT (SELECT count(*) FROM gone),
                   (SELECT count(*) FROM registry_tokens t JOIN gone USING (user_id, app_id, device_id) WHERE t.kind = 2),
                   (SELECT count(*) FROM registry_tokens t WHERE t.kind = 3 AND (t.updated_at <= $2 OR EXISTS (
                        SELECT 1 FROM gone g
                        WHERE g.user_id = t.user_id AND g.app_id = t.app_id AND g.device_id = t.device_id))),
                   (SELECT count(*) FROM registry_tombstones WHERE deleted_at <= $1)
            """, [.int64(deviceCutoff.milliseconds), .int64(activityCutoff.milliseconds)])
        let counts = SweepCounts(devices: Int(try r.int64(0, 0) ?? 0), pushToStartTokens: Int(try r.int64(0, 1) ?? 0),
                                 activityTokens: Int(try r.int64(0, 2) ?? 0), tombstones: Int(try r.int64(0, 3) ?? 0))
        onBatch?(SweepBatchReport(dryRun: true, seconds: 0, counts: counts))
        return counts
    }

    /// Deletes everything expired, batch by batch, each batch one
    /// transaction, then records the sweep's time. Stops between batches
    /// once `cancelled`. A batch is REPEATABLE READ, like a write (see
    /// `PostgresRegistryStore.writing`): a device it deletes that its user's
    /// write touched meanwhile is a conflict, and the batch runs again on a
    /// fresh snapshot (`retryingTransaction`).
    func run(_ connection: PostgresConnection, cancelled: CancelFlag,
             writer: () -> PostgresRecordWriter) throws -> SweepCounts {
        var total = SweepCounts()
        let steps: [(PostgresRecordWriter) throws -> (SweepCounts, done: Bool)] = [
            expiredDevices, expiredTombstones, expiredActivityTokens, expiredHistory,
        ]
        for step in steps {
            var done = false
            while !done {
                if cancelled.isSet { return total }
                let began = ContinuousClock.now
                let counts: SweepCounts
                (counts, done) = try connection.retryingTransaction(isolation: .repeatableRead) { _ in try step(writer()) }
                onBatch?(SweepBatchReport(dryRun: false, seconds: (ContinuousClock.now - began).inSeconds, counts: counts))
                total = total + counts
            }
        }
        try connection.retryingTransaction(isolation: .repeatableRead) { connection in
            try PostgresMeta.put(PostgresSchema.Meta.lastSweepAt, Array(String(writer().now.milliseconds).utf8), connection)
        }
        return total
    }

    private func expiredDevices(_ w: PostgresRecordWriter) throws -> (SweepCounts, done: Bool) {
        let r = try w.connection.query("""
            SELECT user_id, app_id, device_id FROM registry_devices WHERE last_seen_at <= $1 ORDER BY last_seen_at LIMIT $2
            """, [.int64(deviceCutoff.milliseconds), .int64(Int64(batchSize))])
        var counts = SweepCounts()
        for row in 0..<r.rowCount {
            let id = RecordID(user: try r.string(row, 0) ?? "", app: try r.string(row, 1) ?? "", device: try r.string(row, 2) ?? "")
            counts = counts + (try w.deleteDevice(id, reason: .expired))
        }
        return (counts, r.rowCount < batchSize)
    }

    private func expiredTombstones(_ w: PostgresRecordWriter) throws -> (SweepCounts, done: Bool) {
        let r = try w.connection.query("""
            DELETE FROM registry_tombstones WHERE (user_id, app_id, device_id) IN (
                SELECT user_id, app_id, device_id FROM registry_tombstones WHERE deleted_at <= $1 LIMIT $2)
            """, [.int64(deviceCutoff.milliseconds), .int64(Int64(batchSize))])
        return (SweepCounts(tombstones: r.affectedRows), r.affectedRows < batchSize)
    }

    private func expiredActivityTokens(_ w: PostgresRecordWriter) throws -> (SweepCounts, done: Bool) {
        let r = try w.connection.query("""
            SELECT user_id, app_id, device_id, activity_id FROM registry_tokens
            WHERE kind = 3 AND updated_at <= $1 ORDER BY updated_at LIMIT $2
            """, [.int64(activityCutoff.milliseconds), .int64(Int64(batchSize))])
        var counts = SweepCounts()
        for row in 0..<r.rowCount {
            let id = RecordID(user: try r.string(row, 0) ?? "", app: try r.string(row, 1) ?? "", device: try r.string(row, 2) ?? "")
            if try w.removeActivityToken(try r.string(row, 3) ?? "", id, reason: .expired) { counts.activityTokens += 1 }
        }
        return (counts, r.rowCount < batchSize)
    }

    private func expiredHistory(_ w: PostgresRecordWriter) throws -> (SweepCounts, done: Bool) {
        let r = try w.connection.query("""
            DELETE FROM registry_history WHERE (user_id, at, counter) IN (
                SELECT user_id, at, counter FROM registry_history WHERE at <= $1 LIMIT $2)
            """, [.int64(deviceCutoff.milliseconds), .int64(Int64(batchSize))])
        return (SweepCounts(), r.affectedRows < batchSize)
    }
}

/// Set from a task's cancellation handler, read by work on another thread
/// between two steps.
final class CancelFlag: Sendable {
    private let flag = Atomic<Bool>(false)

    var isSet: Bool { flag.load(ordering: .relaxed) }

    func set() { flag.store(true, ordering: .relaxed) }
}
