import RegistryCore
import LMDB

/// The LMDB store's `RecordTransaction`: its write primitives inside one
/// (nested) write transaction. Each
/// keeps its indexes in step in the same transaction as the record: the
/// token owner index with every token, the expiry index with every
/// lastSeen, `deviceActivities` and the device's `activityCount` with every
/// activity token, and the user's token history with every token that
/// comes, changes or goes. Rules (sequence, one owner, caps) are in
/// `RecordWriter+Rules`.
///
/// Ids are compared as bytes, never with `String ==` (which treats
/// canonically equivalent strings as equal while their keys differ).
package struct RecordWriter: RecordTransaction {
    package let txn: WriteTransaction
    let schema: Schema
    package let vault: TokenVault
    let apps: AppCatalog
    package let now: Timestamp
    package var restoring = false
    /// Set by the sweep: an owner entry of a removed token is left and its
    /// key logged for `OwnerCleanup`, instead of deleted in this commit.
    var deferOwnerDeletes = false
    package var declaredApps: DeclaredApps { apps.declared }
    var read: RecordReader { RecordReader(txn: txn, schema: schema, vault: vault, apps: apps) }

    /// The record of (user, appId, device), assigning the app its code when new.
    package func recordID(_ user: String, appId: String, _ device: String) throws -> RecordID {
        RecordID(user: user, app: try apps.code(appId, txn, restoring: restoring), device: device)
    }

    // MARK: Reads (`RecordReader` over the write transaction)

    package func existingRecordID(_ user: String, appId: String, _ device: String) throws -> RecordID? {
        try read.recordID(user, appId: appId, device)
    }

    package func device(_ id: RecordID) throws -> DeviceValue? { try read.device(id) }

    package func tombstone(_ id: RecordID) throws -> TombstoneValue? { try read.tombstone(id) }

    package func token(_ kind: TokenKind, of holder: TokenHolder) throws -> TokenValue? {
        try read.token(kind, read.tokenKey(kind, holder))
    }

    package func owner(of token: String, _ kind: TokenKind) throws -> TokenHolder? { try read.owner(of: token, kind) }

    package func deviceValues(of user: String, app: String) throws -> [(RecordID, DeviceValue)] {
        try read.deviceValues(of: user, app: app)
    }

    package func activities(_ id: RecordID) throws -> [String] { try read.activities(id) }

    package func join(_ id: RecordID, _ value: DeviceValue) throws -> DeviceRecord { try read.join(id, value) }

    // MARK: Devices

    /// Writes a device, moving its expiry entry only when its hour bucket changes.
    package func save(_ id: RecordID, _ value: DeviceValue, previous: DeviceValue?) throws {
        try txn.put(value.encoded(), for: id.key, in: schema.devices)
        try moveExpiry(.device, id.key, from: previous?.lastSeenAt, to: value.lastSeenAt)
    }

    /// Removes a device with all its tokens, each with a history event
    /// naming `reason`. Returns what went, for sweep counts.
    @discardableResult
    package func deleteDevice(_ id: RecordID, reason: HistoryEvent.Reason) throws -> SweepCounts {
        let key = id.key
        guard let value = try read.device(id) else { return SweepCounts() }
        try txn.delete(key, in: schema.devices)
        try txn.delete(ExpiryKey(at: value.lastSeenAt, kind: .device, recordKey: key).bytes, in: schema.expiry)
        var counts = SweepCounts(devices: 1)
        try removeToken(.push, id, reason: reason)
        if try removeToken(.pushToStart, id, reason: reason) { counts.pushToStartTokens = 1 }
        for activity in try read.activities(id) {
            if try removeActivityToken(activity, id, reason: reason) { counts.activityTokens += 1 }
        }
        return counts
    }

    // MARK: Tokens

    /// Stores a device-level token (push or push-to-start) and its owner entry;
    /// the owner entry of a replaced token is dropped. A new or replaced
    /// token is a `registered` or `rotated` event; a refresh is none.
    package func putToken(_ kind: TokenKind, _ id: RecordID, _ value: TokenValue) throws {
        let key = id.key
        let old = try read.token(kind, key)
        try txn.put(Self.refreshed(old, with: value).encoded(in: TokenSlot(kind, key: key), vault), for: key, in: schema.database(kind))
        guard old?.token != value.token else { return }
        if let old { try deleteOwnerEntry(old.token, kind, pointingAt: key) }
        try txn.put(TokenHolder(id: id, activityId: nil).encoded(), for: vault.ownerKey(value.token, kind), in: schema.tokenOwners)
        try recordEvent(id, kind, activity: nil, old == nil ? .registered : .rotated, token: value.token)
    }

    /// `value`, carrying the stored one's sealed bytes when the token is the
    /// same: a re-registration rewrites them instead of sealing again.
    private static func refreshed(_ stored: TokenValue?, with value: TokenValue) -> TokenValue {
        guard var stored, stored.token == value.token else { return value }
        stored.environment = value.environment
        stored.updatedAt = value.updatedAt
        return stored
    }

    package func setTokenEnvironment(_ kind: TokenKind, of holder: TokenHolder, _ environment: APNsEnvironment) throws {
        let key = read.tokenKey(kind, holder)
        guard var stored = try read.token(kind, key) else { return }
        stored.environment = environment
        try txn.put(stored.encoded(in: TokenSlot(kind, key: key), vault), for: key, in: schema.database(kind))
    }

    /// Removes a device-level token and its owner entry; false when there was none.
    @discardableResult
    package func removeToken(_ kind: TokenKind, _ id: RecordID, reason: HistoryEvent.Reason,
                     feedback: FeedbackReason? = nil) throws -> Bool {
        let key = id.key
        guard let old = try read.token(kind, key) else { return false }
        try txn.delete(key, in: schema.database(kind))
        try deleteOwnerEntry(old.token, kind, pointingAt: key)
        try recordEvent(id, kind, activity: nil, .removed, reason: reason, feedback: feedback, token: old.token)
        return true
    }

    /// Stores an activity token with its owner, device-activity and expiry
    /// entries, counting it on its device (which must exist).
    package func putActivityToken(_ activity: String, _ id: RecordID, _ value: TokenValue) throws {
        let key = StoreKey.activityToken(activity, id)
        let old = try read.token(.activity, key)
        try txn.put(Self.refreshed(old, with: value).encoded(in: TokenSlot(.activity, key: key), vault), for: key,
                    in: schema.activityTokens)
        try moveExpiry(.activityToken, key, from: old?.updatedAt, to: value.updatedAt)
        if old == nil {
            try txn.put([], for: StoreKey.deviceActivity(id, activity), in: schema.deviceActivities)
            try countActivity(id, by: 1)
        }
        guard old?.token != value.token else { return }
        if let old { try deleteOwnerEntry(old.token, .activity, pointingAt: key) }
        try txn.put(TokenHolder(id: id, activityId: activity).encoded(), for: vault.ownerKey(value.token, .activity),
                    in: schema.tokenOwners)
        try recordEvent(id, .activity, activity: activity, old == nil ? .registered : .rotated, token: value.token)
    }

    @discardableResult
    package func removeActivityToken(_ activity: String, _ id: RecordID, reason: HistoryEvent.Reason,
                             feedback: FeedbackReason? = nil) throws -> Bool {
        let key = StoreKey.activityToken(activity, id)
        guard let old = try read.token(.activity, key) else { return false }
        try txn.delete(key, in: schema.activityTokens)
        try txn.delete(ExpiryKey(at: old.updatedAt, kind: .activityToken, recordKey: key).bytes, in: schema.expiry)
        try txn.delete(StoreKey.deviceActivity(id, activity), in: schema.deviceActivities)
        try deleteOwnerEntry(old.token, .activity, pointingAt: key)
        try countActivity(id, by: -1)
        try recordEvent(id, .activity, activity: activity, .removed, reason: reason, feedback: feedback, token: old.token)
        return true
    }

    /// Keeps the device's stored `activityCount` in step (no expiry move:
    /// `lastSeenAt` is unchanged). A missing device is left alone: it is
    /// being deleted with its tokens.
    private func countActivity(_ id: RecordID, by delta: Int) throws {
        guard var value = try read.device(id) else { return }
        value.activityCount = max(0, value.activityCount + delta)
        try txn.put(value.encoded(), for: id.key, in: schema.devices)
    }

    /// Drops the owner entry only if it still points at this holder (a newer
    /// holder's entry is left alone); with `deferOwnerDeletes`, logs it instead.
    private func deleteOwnerEntry(_ token: String, _ kind: TokenKind, pointingAt key: [UInt8]) throws {
        let ownerKey = vault.ownerKey(token, kind)
        guard let bytes = try txn.get(ownerKey, in: schema.tokenOwners),
              read.tokenKey(kind, try TokenHolder(decoding: bytes)) == key else { return }
        if deferOwnerDeletes {
            try txn.put(ownerKey, for: try OwnerCleanup.nextLogKey(txn, schema, now: now), in: schema.ownerCleanup)
        } else {
            try txn.delete(ownerKey, in: schema.tokenOwners)
        }
    }

    // MARK: History

    /// Appends one event to the record's user's history, with its expiry
    /// entry (swept with the device TTL). A user keeps at most
    /// `HistoryEvent.maxPerUser` events: the oldest go first.
    package func recordEvent(_ id: RecordID, _ kind: TokenKind, activity: String?, _ action: HistoryEvent.Action,
                     reason: HistoryEvent.Reason? = nil, feedback: FeedbackReason? = nil, token: String) throws {
        guard !restoring else { return }
        let value = HistoryValue(at: now, app: id.app, device: id.device, kind: HistoryEvent.Kind(kind),
                                 activityId: activity, action: action, reason: action == .removed ? reason : nil,
                                 feedbackReason: reason == .feedback ? feedback : nil,
                                 fingerprint: HistoryEvent.fingerprint(of: token))
        try appendHistory(id.user, value)
    }

    /// Writes `value` as the user's newest event (time order kept even if
    /// the clock steps back), then trims the user's history to the bound.
    func appendHistory(_ user: String, _ value: HistoryValue) throws {
        var keys: [[UInt8]] = []
        try txn.scan(schema.history, prefix: StoreKey.user(user)) { key, _ in
            keys.append(key)
            return true
        }
        var at = value.at
        var counter: UInt32 = 0
        if let last = keys.last.flatMap(StoreKey.historyClock), !(last.at < at) {
            at = last.at
            counter = last.counter &+ 1
        }
        var stored = value
        stored.at = at
        let key = StoreKey.history(user, at: at, counter: counter)
        try txn.put(stored.encoded(), for: key, in: schema.history)
        try txn.put([], for: ExpiryKey(at: at, kind: .history, recordKey: key).bytes, in: schema.expiry)
        for old in keys.prefix(max(0, keys.count + 1 - HistoryEvent.maxPerUser)) {
            try deleteHistoryEvent(old)
        }
    }

    @discardableResult
    package func deleteHistoryEvent(_ key: [UInt8]) throws -> Bool {
        guard let clock = StoreKey.historyClock(key), try txn.delete(key, in: schema.history) else { return false }
        try txn.delete(ExpiryKey(at: clock.at, kind: .history, recordKey: key).bytes, in: schema.expiry)
        return true
    }

    // MARK: Tombstones and expiry

    /// Leaves (or raises) a sign-out's tombstone. A user holds at most
    /// `maxTombstones` per app: a new one past that drops the oldest (ties
    /// by deviceId bytes), so deletes of made-up ids cannot grow storage.
    package func putTombstone(_ id: RecordID, sequence: UInt64, maxTombstones: Int) throws {
        let key = id.key
        let old = try read.tombstone(id)
        if old == nil {
            var existing = try read.tombstones(of: id.user, app: id.app)
            if existing.count >= maxTombstones {
                existing.sort { a, b in
                    a.1.deletedAt != b.1.deletedAt ? a.1.deletedAt < b.1.deletedAt
                        : a.0.device.utf8.lexicographicallyPrecedes(b.0.device.utf8)
                }
                for (oldest, _) in existing.prefix(existing.count - max(1, maxTombstones) + 1) {
                    _ = try deleteTombstone(oldest.key)
                }
            }
        }
        let value = TombstoneValue(sequence: max(sequence, old?.sequence ?? 0), deletedAt: now)
        try txn.put(value.encoded(), for: key, in: schema.tombstones)
        try moveExpiry(.tombstone, key, from: old?.deletedAt, to: now)
    }

    package func deleteTombstone(_ key: [UInt8]) throws -> Bool {
        guard let bytes = try txn.get(key, in: schema.tombstones) else { return false }
        let value = try TombstoneValue(decoding: bytes)
        try txn.delete(key, in: schema.tombstones)
        try txn.delete(ExpiryKey(at: value.deletedAt, kind: .tombstone, recordKey: key).bytes, in: schema.expiry)
        return true
    }

    /// Moves an expiry entry between hour buckets; no write when the bucket is unchanged.
    func moveExpiry(_ kind: ExpiryKey.Kind, _ key: [UInt8], from old: Timestamp?, to new: Timestamp) throws {
        if let old, ExpiryKey.bucket(of: old) == ExpiryKey.bucket(of: new) { return }
        if let old { try txn.delete(ExpiryKey(at: old, kind: kind, recordKey: key).bytes, in: schema.expiry) }
        try txn.put([], for: ExpiryKey(at: new, kind: kind, recordKey: key).bytes, in: schema.expiry)
    }
}
