import Codecs
import RegistryCore
import LMDB

/// Typed reads over one transaction: records decoded, tokens opened and
/// joined in, app codes turned back into `appId`s. Used by read
/// transactions and, through `RecordWriter`, inside writes.
struct RecordReader {
    let txn: ReadTransaction
    let schema: Schema
    let vault: TokenVault
    let apps: AppCatalog

    func device(_ id: RecordID) throws -> DeviceValue? {
        try txn.get(id.key, in: schema.devices).map { try DeviceValue(decoding: $0) }
    }

    func token(_ kind: TokenKind, _ key: [UInt8]) throws -> TokenValue? {
        try txn.get(key, in: schema.database(kind)).map { try TokenValue(decoding: $0, in: TokenSlot(kind, key: key), vault) }
    }

    func tombstone(_ id: RecordID) throws -> TombstoneValue? {
        try txn.get(id.key, in: schema.tombstones).map { try TombstoneValue(decoding: $0) }
    }

    /// The record of (user, appId, device) when that app has a code;
    /// `nil` when no record of the app was ever written.
    func recordID(_ user: String, appId: String, _ device: String) throws -> RecordID? {
        try apps.existingCode(appId, txn).map { RecordID(user: user, app: $0, device: device) }
    }

    /// Activities this device holds a token for (at most the per-device cap).
    func activities(_ id: RecordID) throws -> [String] {
        var activities: [String] = []
        try txn.scan(schema.deviceActivities, prefix: id.key) { key, _ in
            if let parts = StoreKey.deviceActivityParts(key) { activities.append(parts.activity) }
            return true
        }
        return activities
    }

    /// One app's tombstones of a user as (record, value), in key order (at most the tombstone cap).
    func tombstones(of user: String, app: String) throws -> [(RecordID, TombstoneValue)] {
        try perRecord(StoreKey.userApp(user, app), in: schema.tombstones, what: "tombstone") { try TombstoneValue(decoding: $0) }
    }

    /// Where `token` of `kind` is held, checked against the holder's stored
    /// token (so a stale index entry never misleads).
    func owner(of token: String, _ kind: TokenKind) throws -> TokenHolder? {
        guard let bytes = try txn.get(vault.ownerKey(token, kind), in: schema.tokenOwners) else { return nil }
        let owner = try TokenHolder(decoding: bytes)
        guard let held = try self.token(kind, tokenKey(kind, owner)), held.token.hasSameBytes(as: token) else {
            return nil
        }
        return owner
    }

    func tokenKey(_ kind: TokenKind, _ owner: TokenHolder) -> [UInt8] {
        switch kind {
        case .push, .pushToStart: owner.id.key
        case .activity: StoreKey.activityToken(owner.activityId ?? "", owner.id)
        }
    }

    /// The full record with its tokens, or `nil`.
    func record(_ id: RecordID) throws -> DeviceRecord? {
        guard let value = try device(id) else { return nil }
        return try join(id, value)
    }

    func join(_ id: RecordID, _ value: DeviceValue) throws -> DeviceRecord {
        try record(id, value, push: try token(.push, id.key), pushToStart: try token(.pushToStart, id.key))
    }

    private func record(_ id: RecordID, _ value: DeviceValue,
                        push: TokenValue?, pushToStart start: TokenValue?, appId: String? = nil) throws -> DeviceRecord {
        DeviceRecord(
            userId: id.user, deviceId: id.device, platform: value.platform, environment: value.environment,
            osVersion: value.osVersion, appVersion: value.appVersion,
            pushToken: push.map { StoredToken(token: $0.token, environment: value.environment, updatedAt: $0.updatedAt) },
            pushToStartToken: start.map { StoredToken(token: $0.token, environment: $0.environment, updatedAt: $0.updatedAt) },
            activityCount: value.activityCount,
            createdAt: value.createdAt, lastSeenAt: value.lastSeenAt, sequence: value.sequence,
            appId: try appId ?? apps.appId(id.app, txn))
    }

    /// (record, value) of every device of one app of a user, in key order.
    func deviceValues(of user: String, app: String) throws -> [(RecordID, DeviceValue)] {
        try perRecord(StoreKey.userApp(user, app), in: schema.devices, what: "device") { try DeviceValue(decoding: $0) }
    }

    /// The (record, decoded value) entries of a (user, app, device)-keyed database under `prefix`.
    private func perRecord<Value>(_ prefix: [UInt8], in db: Database, what: String,
                                  _ decode: ([UInt8]) throws -> Value) throws -> [(RecordID, Value)] {
        var found: [(RecordID, Value)] = []
        try txn.scan(db, prefix: prefix) { key, value in
            guard let id = StoreKey.recordID(key) else { throw StoredValueError(what: "\(what) key", reason: "malformed") }
            found.append((id, try decode(value)))
            return true
        }
        return found
    }

    /// A user's devices (of one app, or of all when `appId` is nil), most
    /// recently seen first, ties by appId then deviceId bytes.
    ///
    /// Three range scans over the user's keys (devices, push tokens,
    /// push-to-start tokens), merged by key: the token databases share the
    /// devices' keys and order, so no per-device lookups. Every hot read
    /// goes through here, so the scans decode in place in LMDB's map: no
    /// entry is copied out, only the records' own fields.
    func records(of user: String, appId: String?) throws -> [DeviceRecord] {
        var prefix = StoreKey.user(user)
        if let appId {
            guard let code = try apps.existingCode(appId, txn) else { return [] }
            prefix = StoreKey.userApp(user, code)
        }
        // Records are built as the devices are read and their tokens set in
        // place, with the keys apart for the joins: an array of (key, id,
        // value) tuples would copy a whole element, through the runtime's
        // generic tuple copy, on every access.
        var keys: [[UInt8]] = []
        var records: [DeviceRecord] = []
        var names = AppCatalog.Names(apps)
        try txn.scanInPlace(schema.devices, prefix: prefix) { key, value in
            guard let id = StoreKey.recordID(key) else { throw StoredValueError(what: "device key", reason: "malformed") }
            keys.append(Array(key))
            records.append(try record(id, try DeviceValue(decoding: value), push: nil, pushToStart: nil,
                                      appId: try names.appId(id.app, txn)))
            return true
        }
        guard !records.isEmpty else { return [] }
        try joinTokens(.push, prefix, keys) { index, token in
            records[index].pushToken = StoredToken(token: token.token, environment: records[index].environment,
                                                   updatedAt: token.updatedAt)
        }
        try joinTokens(.pushToStart, prefix, keys) { records[$0].pushToStartToken = $1 }
        return records.sorted { a, b in
            if a.lastSeenAt != b.lastSeenAt { return a.lastSeenAt > b.lastSeenAt }
            if !a.appId.hasSameBytes(as: b.appId) { return a.appId.utf8.lexicographicallyPrecedes(b.appId.utf8) }
            return a.deviceId.utf8.lexicographicallyPrecedes(b.deviceId.utf8)
        }
    }

    /// Opens the device-level tokens of `kind` under `prefix` and hands
    /// each to `found` with the index of its device's key in `keys` (both
    /// in key order, so one pass). A token without its device is not opened.
    private func joinTokens(_ kind: TokenKind, _ prefix: [UInt8], _ keys: [[UInt8]],
                            _ found: (Int, StoredToken) -> Void) throws {
        var next = 0
        try txn.scanInPlace(schema.database(kind), prefix: prefix) { key, value in
            while next < keys.count, ByteOrder.compare(keys[next], key) < 0 { next += 1 }
            guard next < keys.count else { return false }
            guard ByteOrder.compare(keys[next], key) == 0 else { return true }
            found(next, try TokenValue.opened(inPlace: value, in: TokenSlot(kind, key: key), vault))
            return true
        }
    }

    /// A key as an operator reads it in `check` and repair reports:
    /// `"user"/"device"` for the default app, `"user"/"appId"/"device"`
    /// otherwise (activity keys lead with their activity). Record keys have
    /// the app code second; 4-part keys have it third (`activityTokens`)
    /// unless `deviceActivity` (`deviceActivities`: second).
    func describe(_ key: [UInt8], deviceActivity: Bool = false) -> String {
        guard var parts = StoreKey.decode(key) else { return "<malformed key>" }
        let appAt = parts.count == 3 || deviceActivity ? 1 : parts.count == 4 ? 2 : nil
        if let appAt, appAt < parts.count {
            let appId = (try? apps.appId(parts[appAt], txn)) ?? "app \(parts[appAt])"
            if appId == Identifier.defaultAppId { parts.remove(at: appAt) } else { parts[appAt] = appId }
        }
        return parts.map { "\"\($0)\"" }.joined(separator: "/")
    }

    /// A user's history events, newest first, at most `limit`.
    func history(of user: String, limit: Int) throws -> [HistoryEvent] {
        var events: [HistoryEvent] = []
        var names = AppCatalog.Names(apps)
        try txn.scan(schema.history, prefix: StoreKey.user(user), reverse: true) { _, value in
            let stored = try HistoryValue(decoding: value)
            events.append(HistoryEvent(at: stored.at, userId: user, appId: try names.appId(stored.app, txn),
                                       deviceId: stored.device, kind: stored.kind, activityId: stored.activityId,
                                       action: stored.action, reason: stored.reason,
                                       feedbackReason: stored.feedbackReason, tokenFingerprint: stored.fingerprint))
            return events.count < limit
        }
        return events
    }
}
