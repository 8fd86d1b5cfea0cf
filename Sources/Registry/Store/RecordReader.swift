import LMDB

/// Typed reads over one transaction: records decoded, tokens joined in.
/// Used by read transactions and, through `RecordWriter`, inside writes.
struct RecordReader {
    let txn: ReadTransaction
    let schema: Schema

    func device(_ user: String, _ device: String) throws -> DeviceValue? {
        try txn.get(StoreKey.device(user, device), in: schema.devices).map { try DeviceValue(decoding: $0) }
    }

    func token(_ kind: TokenKind, _ key: [UInt8]) throws -> TokenValue? {
        try txn.get(key, in: schema.database(kind)).map { try TokenValue(decoding: $0) }
    }

    func tombstone(_ user: String, _ device: String) throws -> TombstoneValue? {
        try txn.get(StoreKey.device(user, device), in: schema.tombstones).map { try TombstoneValue(decoding: $0) }
    }

    /// Activities this device holds a token for (at most the per-device cap).
    func activities(_ user: String, _ device: String) throws -> [String] {
        var activities: [String] = []
        let prefix = StoreKey.device(user, device)
        try txn.scan(schema.deviceActivities, prefix: prefix) { key, _ in
            if let parts = StoreKey.decode(key), parts.count == 3 { activities.append(parts[2]) }
            return true
        }
        return activities
    }

    /// The device's least recently refreshed activity (ties by activity id
    /// bytes): the one the activity cap evicts. O(cap).
    func leastRecentActivity(_ user: String, _ device: String) throws -> String? {
        var oldest: (activity: String, at: Timestamp)?
        for activity in try activities(user, device) {
            guard let token = try token(.activity, StoreKey.activityToken(activity, user, device)) else { continue }
            if let current = oldest,
               current.at < token.updatedAt || (current.at == token.updatedAt && !activity.utf8.lexicographicallyPrecedes(current.activity.utf8)) {
                continue
            }
            oldest = (activity, token.updatedAt)
        }
        return oldest?.activity
    }

    /// A user's tombstones as (deviceId, value), in key order (at most the tombstone cap).
    func tombstones(of user: String) throws -> [(String, TombstoneValue)] {
        try perDevice(of: user, in: schema.tombstones, what: "tombstone") { try TombstoneValue(decoding: $0) }
    }

    /// Where `token` of `kind` is held, checked against the holder's stored
    /// token (so a hash collision or a stale index entry never misleads).
    func owner(of token: String, _ kind: TokenKind) throws -> OwnerValue? {
        guard let bytes = try txn.get(StoreKey.tokenOwner(token, kind), in: schema.tokenOwners) else { return nil }
        let owner = try OwnerValue(decoding: bytes)
        guard let held = try self.token(kind, tokenKey(kind, owner)), held.token.utf8.elementsEqual(token.utf8) else {
            return nil
        }
        return owner
    }

    func tokenKey(_ kind: TokenKind, _ owner: OwnerValue) -> [UInt8] {
        switch kind {
        case .push, .pushToStart: StoreKey.device(owner.userId, owner.deviceId)
        case .activity: StoreKey.activityToken(owner.activityId ?? "", owner.userId, owner.deviceId)
        }
    }

    /// The full record with its tokens, or `nil`.
    func record(_ user: String, _ deviceId: String) throws -> DeviceRecord? {
        guard let value = try device(user, deviceId) else { return nil }
        return try join(user, deviceId, value)
    }

    func join(_ user: String, _ deviceId: String, _ value: DeviceValue) throws -> DeviceRecord {
        let key = StoreKey.device(user, deviceId)
        return record(user, deviceId, value, push: try token(.push, key), pushToStart: try token(.pushToStart, key))
    }

    private func record(_ user: String, _ deviceId: String, _ value: DeviceValue,
                        push: TokenValue?, pushToStart start: TokenValue?) -> DeviceRecord {
        DeviceRecord(
            userId: user, deviceId: deviceId, platform: value.platform, environment: value.environment,
            osVersion: value.osVersion, appVersion: value.appVersion,
            pushToken: push.map { StoredToken(token: $0.token, environment: value.environment, updatedAt: $0.updatedAt) },
            pushToStartToken: start.map { StoredToken(token: $0.token, environment: $0.environment, updatedAt: $0.updatedAt) },
            activityCount: value.activityCount,
            createdAt: value.createdAt, lastSeenAt: value.lastSeenAt, sequence: value.sequence)
    }

    /// (deviceId, value) of every device of a user, in key order.
    func deviceValues(of user: String) throws -> [(String, DeviceValue)] {
        try perDevice(of: user, in: schema.devices, what: "device") { try DeviceValue(decoding: $0) }
    }

    /// The (deviceId, decoded value) entries of a (user, device)-keyed database for one user.
    private func perDevice<Value>(of user: String, in db: Database, what: String,
                                  _ decode: ([UInt8]) throws -> Value) throws -> [(String, Value)] {
        var found: [(String, Value)] = []
        try txn.scan(db, prefix: StoreKey.user(user)) { key, value in
            guard let parts = StoreKey.decode(key), parts.count == 2 else {
                throw StoredValueError(what: "\(what) key", reason: "malformed")
            }
            found.append((parts[1], try decode(value)))
            return true
        }
        return found
    }

    /// A user's devices, most recently seen first, ties by deviceId ascending.
    ///
    /// Three range scans over the user's keys (devices, push tokens,
    /// push-to-start tokens), merged by key: the token databases share the
    /// devices' (user, device) keys and order, so no per-device lookups.
    func records(of user: String) throws -> [DeviceRecord] {
        let prefix = StoreKey.user(user)
        var devices: [(key: [UInt8], deviceId: String, value: DeviceValue)] = []
        try txn.scan(schema.devices, prefix: prefix) { key, value in
            guard let parts = StoreKey.decode(key), parts.count == 2 else {
                throw StoredValueError(what: "device key", reason: "malformed")
            }
            devices.append((key, parts[1], try DeviceValue(decoding: value)))
            return true
        }
        guard !devices.isEmpty else { return [] }
        let push = try tokens(.push, prefix)
        let pushToStart = try tokens(.pushToStart, prefix)
        var nextPush = 0, nextStart = 0
        var records: [DeviceRecord] = []
        records.reserveCapacity(devices.count)
        for device in devices {
            records.append(record(user, device.deviceId, device.value,
                                  push: Self.take(device.key, from: push, at: &nextPush),
                                  pushToStart: Self.take(device.key, from: pushToStart, at: &nextStart)))
        }
        return records.sorted { a, b in
            a.lastSeenAt != b.lastSeenAt ? a.lastSeenAt > b.lastSeenAt : a.deviceId.utf8.lexicographicallyPrecedes(b.deviceId.utf8)
        }
    }

    /// The device-level tokens under `prefix`, in key order.
    private func tokens(_ kind: TokenKind, _ prefix: [UInt8]) throws -> [(key: [UInt8], value: TokenValue)] {
        var found: [(key: [UInt8], value: TokenValue)] = []
        try txn.scan(schema.database(kind), prefix: prefix) { key, value in
            found.append((key, try TokenValue(decoding: value)))
            return true
        }
        return found
    }

    /// The token stored under `key`, advancing `index` through `tokens` (both in key order).
    private static func take(_ key: [UInt8], from tokens: [(key: [UInt8], value: TokenValue)], at index: inout Int) -> TokenValue? {
        while index < tokens.count, tokens[index].key.lexicographicallyPrecedes(key) { index += 1 }
        guard index < tokens.count, tokens[index].key == key else { return nil }
        return tokens[index].value
    }
}
