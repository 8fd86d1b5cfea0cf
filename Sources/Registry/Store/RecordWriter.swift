import LMDB

/// The store's write primitives inside one (nested) write transaction. Each
/// keeps its indexes in step in the same transaction as the record: the
/// token owner index with every token, the expiry index with every
/// lastSeen, `deviceActivities` and the device's `activityCount` with every
/// activity token. Rules (sequence, one owner, caps) are in `RecordWriter+Rules`.
///
/// Ids are compared as bytes, never with `String ==` (which treats
/// canonically equivalent strings as equal while their keys differ).
struct RecordWriter {
    let txn: WriteTransaction
    let schema: Schema
    let now: Timestamp
    var read: RecordReader { RecordReader(txn: txn, schema: schema) }

    // MARK: Devices

    /// Writes a device, moving its expiry entry only when its hour bucket changes.
    func save(_ user: String, _ device: String, _ value: DeviceValue, previous: DeviceValue?) throws {
        let key = StoreKey.device(user, device)
        try txn.put(value.encoded(), for: key, in: schema.devices)
        try moveExpiry(.device, key, from: previous?.lastSeenAt, to: value.lastSeenAt)
    }

    /// Removes a device with all its tokens. Returns what went, for sweep counts.
    @discardableResult
    func deleteDevice(_ user: String, _ device: String) throws -> SweepCounts {
        let key = StoreKey.device(user, device)
        guard let value = try read.device(user, device) else { return SweepCounts() }
        try txn.delete(key, in: schema.devices)
        try txn.delete(ExpiryKey(at: value.lastSeenAt, kind: .device, recordKey: key).bytes, in: schema.expiry)
        var counts = SweepCounts(devices: 1)
        try removeToken(.push, key)
        if try removeToken(.pushToStart, key) { counts.pushToStartTokens = 1 }
        for activity in try read.activities(user, device) {
            if try removeActivityToken(activity, user, device) { counts.activityTokens += 1 }
        }
        return counts
    }

    // MARK: Tokens

    /// Stores a device-level token (push or push-to-start) and its owner entry;
    /// the owner entry of a replaced token is dropped.
    func putToken(_ kind: TokenKind, user: String, device: String, _ value: TokenValue) throws {
        let key = StoreKey.device(user, device)
        let old = try read.token(kind, key)
        try txn.put(value.encoded(), for: key, in: schema.database(kind))
        guard old?.token != value.token else { return }
        if let old { try txn.delete(StoreKey.tokenOwner(old.token, kind), in: schema.tokenOwners) }
        try txn.put(OwnerValue(userId: user, deviceId: device, activityId: nil).encoded(),
                    for: StoreKey.tokenOwner(value.token, kind), in: schema.tokenOwners)
    }

    /// Removes a device-level token and its owner entry; false when there was none.
    @discardableResult
    func removeToken(_ kind: TokenKind, _ key: [UInt8]) throws -> Bool {
        guard let old = try read.token(kind, key) else { return false }
        try txn.delete(key, in: schema.database(kind))
        try deleteOwnerEntry(old.token, kind, pointingAt: key)
        return true
    }

    /// Stores an activity token with its owner, device-activity and expiry
    /// entries, counting it on its device (which must exist).
    func putActivityToken(_ activity: String, user: String, device: String, _ value: TokenValue) throws {
        let key = StoreKey.activityToken(activity, user, device)
        let old = try read.token(.activity, key)
        try txn.put(value.encoded(), for: key, in: schema.activityTokens)
        try moveExpiry(.activityToken, key, from: old?.updatedAt, to: value.updatedAt)
        if old == nil {
            try txn.put([], for: StoreKey.deviceActivity(user, device, activity), in: schema.deviceActivities)
            try countActivity(user, device, by: 1)
        }
        guard old?.token != value.token else { return }
        if let old { try deleteOwnerEntry(old.token, .activity, pointingAt: key) }
        try txn.put(OwnerValue(userId: user, deviceId: device, activityId: activity).encoded(),
                    for: StoreKey.tokenOwner(value.token, .activity), in: schema.tokenOwners)
    }

    @discardableResult
    func removeActivityToken(_ activity: String, _ user: String, _ device: String) throws -> Bool {
        let key = StoreKey.activityToken(activity, user, device)
        guard let old = try read.token(.activity, key) else { return false }
        try txn.delete(key, in: schema.activityTokens)
        try txn.delete(ExpiryKey(at: old.updatedAt, kind: .activityToken, recordKey: key).bytes, in: schema.expiry)
        try txn.delete(StoreKey.deviceActivity(user, device, activity), in: schema.deviceActivities)
        try deleteOwnerEntry(old.token, .activity, pointingAt: key)
        try countActivity(user, device, by: -1)
        return true
    }

    /// Keeps the device's stored `activityCount` in step (no expiry move:
    /// `lastSeenAt` is unchanged). A missing device is left alone: it is
    /// being deleted with its tokens.
    private func countActivity(_ user: String, _ device: String, by delta: Int) throws {
        guard var value = try read.device(user, device) else { return }
        value.activityCount = max(0, value.activityCount + delta)
        try txn.put(value.encoded(), for: StoreKey.device(user, device), in: schema.devices)
    }

    /// Drops the owner entry only if it still points at this holder (a newer
    /// holder's entry is left alone).
    private func deleteOwnerEntry(_ token: String, _ kind: TokenKind, pointingAt key: [UInt8]) throws {
        let ownerKey = StoreKey.tokenOwner(token, kind)
        guard let bytes = try txn.get(ownerKey, in: schema.tokenOwners) else { return }
        if read.tokenKey(kind, try OwnerValue(decoding: bytes)) == key {
            try txn.delete(ownerKey, in: schema.tokenOwners)
        }
    }

    // MARK: Tombstones and expiry

    /// Leaves (or raises) a sign-out's tombstone. A user holds at most
    /// `maxTombstones`: a new one past that drops the user's oldest (ties by
    /// deviceId bytes), so deletes of made-up ids cannot grow storage.
    func putTombstone(_ user: String, _ device: String, sequence: UInt64, maxTombstones: Int) throws {
        let key = StoreKey.device(user, device)
        let old = try read.tombstone(user, device)
        if old == nil {
            var existing = try read.tombstones(of: user)
            if existing.count >= maxTombstones {
                existing.sort { a, b in
                    a.1.deletedAt != b.1.deletedAt ? a.1.deletedAt < b.1.deletedAt : a.0.utf8.lexicographicallyPrecedes(b.0.utf8)
                }
                for (deviceId, _) in existing.prefix(existing.count - max(1, maxTombstones) + 1) {
                    _ = try deleteTombstone(StoreKey.device(user, deviceId))
                }
            }
        }
        let value = TombstoneValue(sequence: max(sequence, old?.sequence ?? 0), deletedAt: now)
        try txn.put(value.encoded(), for: key, in: schema.tombstones)
        try moveExpiry(.tombstone, key, from: old?.deletedAt, to: now)
    }

    func deleteTombstone(_ key: [UInt8]) throws -> Bool {
        guard let bytes = try txn.get(key, in: schema.tombstones) else { return false }
        let value = try TombstoneValue(decoding: bytes)
        try txn.delete(key, in: schema.tombstones)
        try txn.delete(ExpiryKey(at: value.deletedAt, kind: .tombstone, recordKey: key).bytes, in: schema.expiry)
        return true
    }

    /// Moves an expiry entry between hour buckets; no write when the bucket is unchanged.
    private func moveExpiry(_ kind: ExpiryKey.Kind, _ key: [UInt8], from old: Timestamp?, to new: Timestamp) throws {
        if let old, ExpiryKey.bucket(of: old) == ExpiryKey.bucket(of: new) { return }
        if let old { try txn.delete(ExpiryKey(at: old, kind: kind, recordKey: key).bytes, in: schema.expiry) }
        try txn.put([], for: ExpiryKey(at: new, kind: kind, recordKey: key).bytes, in: schema.expiry)
    }
}
