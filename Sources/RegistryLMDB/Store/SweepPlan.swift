import RegistryCore
import LMDB

/// One sweep: the cutoffs, fixed when it starts, and the bounded steps that
/// walk the expiry index from its oldest bucket.
///
/// Each step reads at most `batchSize` expiry entries from where the last
/// one stopped, re-checks the exact time in the record (the index is keyed
/// by hour, and a record may have been refreshed since it was read), and
/// deletes what expired, for at most `stepBudget`: a step is one writer
/// command, and the writes queued behind it wait for it. It stops at the
/// first bucket past the latest cutoff, so a sweep costs O(expired + one
/// hour's entries), not O(store).
struct SweepPlan: Sendable {
    let deviceCutoff: Timestamp
    let activityCutoff: Timestamp
    let batchSize: Int
    let stepBudget: Duration

    init(now: Timestamp, deviceTTL: Duration, activityTTL: Duration, batchSize: Int, stepBudget: Duration) {
        deviceCutoff = now.subtracting(deviceTTL)
        activityCutoff = now.subtracting(activityTTL)
        self.batchSize = max(1, batchSize)
        self.stepBudget = stepBudget
    }

    /// Devices first, so activity tokens that go with their device are not
    /// visited again as tokens.
    /// History last: the devices and tokens it sweeps write `expired` events,
    /// which are new and stay.
    static let order: [ExpiryKey.Kind] = [.device, .tombstone, .activityToken, .history]

    func cutoff(_ kind: ExpiryKey.Kind) -> Timestamp {
        kind == .activityToken ? activityCutoff : deviceCutoff
    }

    /// Up to `batchSize` expiry entries of `kind` at or after `start` (the
    /// kind's first key when nil) and in buckets up to its cutoff; the
    /// resume key is `nil` when the kind is done.
    func entries(_ kind: ExpiryKey.Kind, _ txn: ReadTransaction, _ schema: Schema,
                 from start: [UInt8]?) throws -> (keys: [ExpiryKey], resume: [UInt8]?) {
        var keys: [ExpiryKey] = []
        var resume: [UInt8]?
        let end = ExpiryKey.start(of: kind, bucket: ExpiryKey.bucket(of: cutoff(kind)) + 1)
        try txn.scan(schema.expiry, from: start ?? ExpiryKey.start(of: kind, bucket: 0)) { key, _ in
            guard key.lexicographicallyPrecedes(end) else { return false }
            if keys.count == batchSize {
                resume = key
                return false
            }
            if let parsed = ExpiryKey(bytes: key) { keys.append(parsed) }
            return true
        }
        return (keys, resume)
    }

    /// Whether the record behind `entry` has expired, by its exact time.
    func isExpired(_ entry: ExpiryKey, _ read: RecordReader) throws -> Bool {
        switch entry.kind {
        case .device:
            guard let id = StoreKey.recordID(entry.recordKey), let device = try read.device(id) else { return false }
            return device.lastSeenAt <= deviceCutoff
        case .activityToken:
            guard let token = try read.token(.activity, entry.recordKey) else { return false }
            return token.updatedAt <= activityCutoff
        case .tombstone:
            guard let id = StoreKey.recordID(entry.recordKey), let tombstone = try read.tombstone(id) else { return false }
            return tombstone.deletedAt <= deviceCutoff
        case .history:
            guard let clock = StoreKey.historyClock(entry.recordKey) else { return false }
            return clock.at <= deviceCutoff
        }
    }

    /// Deletes what expired among `keys`, in order, until `stepBudget` is
    /// spent (one entry at least). Returns the counts and, when it stopped
    /// early, the key of the first entry it left for the next step.
    /// The owner entries of what it removes are left for `OwnerCleanup`.
    func delete(_ keys: [ExpiryKey], _ writer: RecordWriter) throws -> (SweepCounts, stoppedAt: [UInt8]?) {
        var writer = writer
        writer.deferOwnerDeletes = true
        var counts = SweepCounts()
        let deadline = ContinuousClock.now + stepBudget
        for (index, entry) in keys.enumerated() {
            if index > 0, ContinuousClock.now >= deadline { return (counts, entry.bytes) }
            guard try isExpired(entry, writer.read) else { continue }
            switch entry.kind {
            case .device:
                guard let id = StoreKey.recordID(entry.recordKey) else { continue }
                counts = counts + (try writer.deleteDevice(id, reason: .expired))
            case .activityToken:
                guard let parts = StoreKey.activityTokenParts(entry.recordKey) else { continue }
                if try writer.removeActivityToken(parts.activity, parts.id, reason: .expired) { counts.activityTokens += 1 }
            case .tombstone:
                if try writer.deleteTombstone(entry.recordKey) { counts.tombstones += 1 }
            case .history:
                try writer.deleteHistoryEvent(entry.recordKey)
            }
        }
        return (counts, nil)
    }

    /// What `delete` would remove, without writing. Activity tokens that
    /// would go with their device are counted once, with the device.
    func count(_ keys: [ExpiryKey], _ read: RecordReader, alreadyCounted: inout Set<[UInt8]>) throws -> SweepCounts {
        var counts = SweepCounts()
        for entry in keys where try isExpired(entry, read) {
            switch entry.kind {
            case .device:
                guard let id = StoreKey.recordID(entry.recordKey) else { continue }
                counts.devices += 1
                if try read.token(.pushToStart, entry.recordKey) != nil { counts.pushToStartTokens += 1 }
                for activity in try read.activities(id) {
                    let key = StoreKey.activityToken(activity, id)
                    if alreadyCounted.insert(key).inserted { counts.activityTokens += 1 }
                }
            case .activityToken:
                if alreadyCounted.insert(entry.recordKey).inserted { counts.activityTokens += 1 }
            case .tombstone:
                counts.tombstones += 1
            case .history:
                break
            }
        }
        return counts
    }
}
