import RegistryCore
import LMDB

/// Operator work: a consistency check of every index, and export/import of
/// all records (for moving a registry or rebuilding its indexes).
extension LMDBRegistryStore {
    /// Every record, device by device (with its tokens), then the
    /// tombstones, then every user's token history (oldest first), in one
    /// read transaction (a consistent snapshot). Tokens are opened:
    /// export is plaintext (an operator tool).
    public func export(_ visit: (ExportedRecord) throws -> Void) throws {
        try reading { read in
            var ids: [RecordID] = []
            try read.txn.scan(schema.devices) { key, _ in
                guard let id = StoreKey.recordID(key) else { throw StoredValueError(what: "device key", reason: "malformed") }
                ids.append(id)
                return true
            }
            for id in ids {
                guard let record = try read.record(id) else { continue }
                var tokens: [ActivityToken] = []
                for activity in try read.activities(id) {
                    guard let token = try read.token(.activity, StoreKey.activityToken(activity, id)) else { continue }
                    tokens.append(ActivityToken(activityId: activity, userId: id.user, deviceId: id.device, token: token.token,
                                                environment: token.environment, lastSeenAt: token.updatedAt,
                                                appId: record.appId))
                }
                try visit(.device(record, activityTokens: tokens))
            }
            try read.txn.scan(schema.tombstones) { key, value in
                guard let id = StoreKey.recordID(key) else { return true }
                let tombstone = try TombstoneValue(decoding: value)
                try visit(.tombstone(Tombstone(userId: id.user, deviceId: id.device, sequence: tombstone.sequence,
                                               deletedAt: tombstone.deletedAt, appId: try read.apps.appId(id.app, read.txn))))
                return true
            }
            try read.txn.scan(schema.history) { key, value in
                guard let parts = StoreKey.decode(key.dropLast(12)), parts.count == 1 else { return true }
                let stored = try HistoryValue(decoding: value)
                try visit(.history(HistoryEvent(
                    at: stored.at, userId: parts[0], appId: try read.apps.appId(stored.app, read.txn),
                    deviceId: stored.device, kind: stored.kind, activityId: stored.activityId, action: stored.action,
                    reason: stored.reason, feedbackReason: stored.feedbackReason, tokenFingerprint: stored.fingerprint)))
                return true
            }
        }
    }

    /// Reads every database and checks each index against its records.
    /// Returns the problems found (at most `limit`); empty means consistent.
    /// `progress`, when given, is called on the caller's thread with the
    /// number of entries visited so far, every 1,000 entries and once at
    /// the end (one read transaction: it only reports, it changes nothing).
    public func check(limit: Int = 100, progress: ((_ entriesDone: Int) -> Void)? = nil) throws -> [String] {
        try reading { read in
            var checker = IndexChecker(read: read, schema: schema, limit: limit, progress: progress)
            try checker.run()
            return checker.problems
        }
    }
}

extension LMDBRegistryStore {
    /// Rebuilds every index from the records (`IndexRepair`): puts back
    /// missing entries, corrects wrong ones, deletes those no record backs,
    /// removes tokens whose device is gone, and settles a token two records
    /// hold (the holder updated later keeps it). Safe beside a running
    /// server, in this process or another: each bounded step (at most
    /// `batchSize` entries, and at most `stepBudget` once past the first) is
    /// one command of the group-commit writer and decides only from what it
    /// reads in its own transaction. On a consistent store it only reads:
    /// the data file stays byte for byte as it was.
    ///
    /// `progress` is called on the caller's task after every step with the
    /// number of entries (records and index entries) visited so far. A
    /// cancelled task stops between two steps with `CancellationError`;
    /// what was fixed stays fixed. The report keeps the first `lineLimit`
    /// fixes as lines.
    public func rebuildIndexes(batchSize: Int = 500, stepBudget: Duration = .milliseconds(4), lineLimit: Int = 100,
                               progress: ((_ recordsDone: Int) -> Void)? = nil) async throws -> RepairReport {
        try environment.checkStaleReaders()
        var planned = IndexRepair(schema: schema, batchSize: batchSize, stepBudget: stepBudget, lineLimit: lineLimit)
        planned.pendingCleanup = try reading { read in try OwnerCleanup.pending(read.txn, schema) }
        let repair = planned
        var report = RepairReport()
        var done = 0
        for walk in IndexRepair.Walk.allCases {
            try await ResumableSteps.run { from in
                let step = try await writing { writer in try repair.step(walk, writer, from: from) }
                report.add(step.report, lineLimit: repair.lineLimit)
                done += step.visited
                progress?(done)
                return step.resume
            }
        }
        return report
    }
}

extension RecordWriter {
    package func restoreTombstone(_ t: Tombstone) throws {
        let id = try recordID(t.userId, appId: t.appId, t.deviceId)
        if let old = try read.tombstone(id) {
            try txn.delete(ExpiryKey(at: old.deletedAt, kind: .tombstone, recordKey: id.key).bytes, in: schema.expiry)
        }
        try txn.put(TombstoneValue(sequence: t.sequence, deletedAt: t.deletedAt).encoded(), for: id.key, in: schema.tombstones)
        try txn.put([], for: ExpiryKey(at: t.deletedAt, kind: .tombstone, recordKey: id.key).bytes, in: schema.expiry)
    }

    /// Puts an exported history event back at its own time, unless the
    /// user already has `occurrence` identical ones; then trims to the
    /// per-user bound.
    package func restoreHistory(_ e: HistoryEvent, occurrence: Int) throws {
        let value = HistoryValue(at: e.at, app: try recordID(e.userId, appId: e.appId, e.deviceId).app, device: e.deviceId, kind: e.kind,
                                 activityId: e.activityId, action: e.action, reason: e.reason,
                                 feedbackReason: e.feedbackReason, fingerprint: e.tokenFingerprint)
        var keys: [[UInt8]] = []
        var counter: UInt32 = 0
        var identical = 0
        try txn.scan(schema.history, prefix: StoreKey.user(e.userId)) { key, bytes in
            keys.append(key)
            if let clock = StoreKey.historyClock(key), clock.at == e.at {
                counter = max(counter, clock.counter &+ 1)
                if try HistoryValue(decoding: bytes) == value { identical += 1 }
            }
            return true
        }
        guard identical < occurrence else { return }
        let key = StoreKey.history(e.userId, at: e.at, counter: counter)
        try txn.put(value.encoded(), for: key, in: schema.history)
        try txn.put([], for: ExpiryKey(at: e.at, kind: .history, recordKey: key).bytes, in: schema.expiry)
        keys.append(key)
        keys.sort { $0.lexicographicallyPrecedes($1) }
        for old in keys.prefix(max(0, keys.count - HistoryEvent.maxPerUser)) {
            try deleteHistoryEvent(old)
        }
    }
}

extension LMDBRegistryStore {
    public func repairIndexes(lineLimit: Int, progress: ((_ entriesDone: Int) -> Void)?) async throws -> IndexRepairSummary? {
        let report = try await rebuildIndexes(lineLimit: lineLimit, progress: progress)
        return IndexRepairSummary(lines: report.lines, linesLeftOut: report.linesLeftOut, summary: report.summary)
    }

    /// `false` once a commit failed or the map could not grow.
    public var hasFailedPermanently: Bool { !isHealthy }
}
