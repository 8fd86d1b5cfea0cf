import LMDB

/// Operator work: a consistency check of every index, and export/import of
/// all records (for moving a registry or rebuilding its indexes).
extension LMDBRegistryStore {
    /// Every record, device by device (with its tokens), then the
    /// tombstones, in one read transaction (a consistent snapshot).
    public func export(_ visit: (ExportedRecord) throws -> Void) throws {
        try reading { read in
            var devices: [(String, String)] = []
            try read.txn.scan(schema.devices) { key, _ in
                guard let parts = StoreKey.decode(key), parts.count == 2 else {
                    throw StoredValueError(what: "device key", reason: "malformed")
                }
                devices.append((parts[0], parts[1]))
                return true
            }
            for (user, device) in devices {
                guard let record = try read.record(user, device) else { continue }
                var tokens: [ActivityToken] = []
                for activity in try read.activities(user, device) {
                    guard let token = try read.token(.activity, StoreKey.activityToken(activity, user, device)) else { continue }
                    tokens.append(ActivityToken(activityId: activity, userId: user, deviceId: device, token: token.token,
                                                environment: token.environment, lastSeenAt: token.updatedAt))
                }
                try visit(.device(record, activityTokens: tokens))
            }
            try read.txn.scan(schema.tombstones) { key, value in
                guard let parts = StoreKey.decode(key), parts.count == 2 else { return true }
                let tombstone = try TombstoneValue(decoding: value)
                try visit(.tombstone(userId: parts[0], deviceId: parts[1], sequence: tombstone.sequence,
                                     deletedAt: tombstone.deletedAt))
                return true
            }
        }
    }

    /// Writes exported records as they are (replacing a record with the same
    /// key, timestamps kept), in group-commit batches. A token already held
    /// elsewhere moves to the imported record (the one-owner rule).
    /// Returns how many records were written.
    public func importRecords(_ records: [ExportedRecord]) async throws -> Int {
        var written = 0
        for start in stride(from: 0, to: records.count, by: 500) {
            let chunk = Array(records[start..<min(start + 500, records.count)])
            written += try await writing { writer in
                for record in chunk { try writer.restore(record) }
                return chunk.count
            }
        }
        return written
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
    public func repairIndexes(batchSize: Int = 500, stepBudget: Duration = .milliseconds(4), lineLimit: Int = 100,
                              progress: ((_ recordsDone: Int) -> Void)? = nil) async throws -> RepairReport {
        try environment.checkStaleReaders()
        let repair = IndexRepair(schema: schema, batchSize: batchSize, stepBudget: stepBudget, lineLimit: lineLimit)
        var report = RepairReport()
        var done = 0
        for walk in IndexRepair.Walk.allCases {
            var start: [UInt8]?
            repeat {
                try Task.checkCancellation()
                let from = start
                let step = try await writing { writer in try repair.step(walk, writer, from: from) }
                report.add(step.report, lineLimit: repair.lineLimit)
                done += step.visited
                progress?(done)
                start = step.resume
            } while start != nil
        }
        return report
    }
}

extension RecordWriter {
    /// Puts one exported record back with all its index entries.
    func restore(_ record: ExportedRecord) throws {
        switch record {
        case .device(let d, let activityTokens):
            if try read.device(d.userId, d.deviceId) != nil { try deleteDevice(d.userId, d.deviceId) }
            for (kind, token) in [(TokenKind.push, d.pushToken), (.pushToStart, d.pushToStartToken)] {
                if let token, let owner = try read.owner(of: token.token, kind),
                   read.tokenKey(kind, owner) != StoreKey.device(d.userId, d.deviceId) {
                    try deleteDevice(owner.userId, owner.deviceId)
                }
            }
            let value = DeviceValue(platform: d.platform, environment: d.environment, osVersion: d.osVersion,
                                    appVersion: d.appVersion, createdAt: d.createdAt, lastSeenAt: d.lastSeenAt,
                                    sequence: d.sequence)
            try save(d.userId, d.deviceId, value, previous: nil)
            if let push = d.pushToken {
                try putToken(.push, user: d.userId, device: d.deviceId,
                             TokenValue(token: push.token, environment: d.environment, updatedAt: push.updatedAt))
            }
            if let start = d.pushToStartToken {
                try putToken(.pushToStart, user: d.userId, device: d.deviceId,
                             TokenValue(token: start.token, environment: start.environment, updatedAt: start.updatedAt))
            }
            for t in activityTokens {
                if let owner = try read.owner(of: t.token, .activity) {
                    try removeActivityToken(owner.activityId ?? "", owner.userId, owner.deviceId)
                }
                try putActivityToken(t.activityId, user: d.userId, device: d.deviceId,
                                     TokenValue(token: t.token, environment: t.environment, updatedAt: t.lastSeenAt))
            }
        case .tombstone(let user, let device, let sequence, let deletedAt):
            let key = StoreKey.device(user, device)
            if let old = try read.tombstone(user, device) {
                try txn.delete(ExpiryKey(at: old.deletedAt, kind: .tombstone, recordKey: key).bytes, in: schema.expiry)
            }
            try txn.put(TombstoneValue(sequence: sequence, deletedAt: deletedAt).encoded(), for: key, in: schema.tombstones)
            try txn.put([], for: ExpiryKey(at: deletedAt, kind: .tombstone, recordKey: key).bytes, in: schema.expiry)
        }
    }
}
