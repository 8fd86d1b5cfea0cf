/// The values of the store's databases, each with a compact versioned
/// binary encoding (version byte first), so a later schema can read old
/// records and migrate them.

/// `devices`: the record without its tokens.
///
/// Version 2 added `activityCount`, kept in step with `deviceActivities` so
/// that reads, sign-out and the activity cap never scan. A version 1 value
/// decodes with `activityCount` 0 and `needsActivityCount` set; the schema
/// migration at open (`SchemaMigration`) rewrites every one of them.
struct DeviceValue: Hashable {
    var platform: Platform
    /// The push token's environment.
    var environment: APNsEnvironment
    var osVersion: String?
    var appVersion: String?
    var createdAt: Timestamp
    var lastSeenAt: Timestamp
    var sequence: UInt64?
    /// How many activity tokens the device holds (at most the per-device cap).
    var activityCount: Int
    /// Decoded from a version 1 value, which did not store `activityCount`.
    /// Not part of equality: it says how the value was read, not what it holds.
    private(set) var needsActivityCount = false

    static func == (a: DeviceValue, b: DeviceValue) -> Bool {
        a.platform == b.platform && a.environment == b.environment && a.osVersion == b.osVersion
            && a.appVersion == b.appVersion && a.createdAt == b.createdAt && a.lastSeenAt == b.lastSeenAt
            && a.sequence == b.sequence && a.activityCount == b.activityCount
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(platform)
        hasher.combine(environment)
        hasher.combine(osVersion)
        hasher.combine(appVersion)
        hasher.combine(createdAt)
        hasher.combine(lastSeenAt)
        hasher.combine(sequence)
        hasher.combine(activityCount)
    }

    func encoded() -> [UInt8] {
        var w = ByteWriter(version: 2)
        w.byte(UInt8(Platform.allCases.firstIndex(of: platform)!))
        w.byte(UInt8(APNsEnvironment.allCases.firstIndex(of: environment)!))
        w.byte((osVersion != nil ? 1 : 0) | (appVersion != nil ? 2 : 0) | (sequence != nil ? 4 : 0))
        w.timestamp(createdAt)
        w.timestamp(lastSeenAt)
        if let osVersion { w.string(osVersion) }
        if let appVersion { w.string(appVersion) }
        if let sequence { w.varint(sequence) }
        w.varint(UInt64(max(0, activityCount)))
        return w.bytes
    }

    init(platform: Platform, environment: APNsEnvironment, osVersion: String?, appVersion: String?,
         createdAt: Timestamp, lastSeenAt: Timestamp, sequence: UInt64?, activityCount: Int = 0) {
        self.platform = platform
        self.environment = environment
        self.osVersion = osVersion
        self.appVersion = appVersion
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.sequence = sequence
        self.activityCount = activityCount
    }

    init(decoding bytes: [UInt8]) throws(StoredValueError) {
        var r = try ByteReader(bytes, what: "device", versions: 1...2)
        platform = try r.enumValue(Platform.self, Platform.allCases)
        environment = try r.enumValue(APNsEnvironment.self, APNsEnvironment.allCases)
        let flags = try r.byte()
        createdAt = try r.timestamp()
        lastSeenAt = try r.timestamp()
        osVersion = flags & 1 != 0 ? try r.string() : nil
        appVersion = flags & 2 != 0 ? try r.string() : nil
        sequence = flags & 4 != 0 ? try r.varint() : nil
        if r.version >= 2 {
            let count = try r.varint()
            guard count <= UInt64(Int32.max) else { throw StoredValueError(what: "device", reason: "activity count out of range") }
            activityCount = Int(count)
        } else {
            activityCount = 0
            needsActivityCount = true
        }
        try r.finish()
    }
}

/// `pushTokens`, `pushToStart`, `activityTokens`: one token.
struct TokenValue: Hashable {
    var token: String
    var environment: APNsEnvironment
    /// The last time a registration carried it.
    var updatedAt: Timestamp

    func encoded() -> [UInt8] {
        var w = ByteWriter(version: 1)
        w.byte(UInt8(APNsEnvironment.allCases.firstIndex(of: environment)!))
        w.timestamp(updatedAt)
        w.string(token)
        return w.bytes
    }

    init(token: String, environment: APNsEnvironment, updatedAt: Timestamp) {
        self.token = token
        self.environment = environment
        self.updatedAt = updatedAt
    }

    init(decoding bytes: [UInt8]) throws(StoredValueError) {
        var r = try ByteReader(bytes, what: "token", versions: 1...1)
        environment = try r.enumValue(APNsEnvironment.self, APNsEnvironment.allCases)
        updatedAt = try r.timestamp()
        token = try r.string()
        try r.finish()
    }
}

/// `tokenOwners`: where a token is held.
struct OwnerValue: Hashable {
    var userId: String
    var deviceId: String
    /// Set for activity tokens only.
    var activityId: String?

    func encoded() -> [UInt8] {
        var w = ByteWriter(version: 1)
        w.string(userId)
        w.string(deviceId)
        w.byte(activityId != nil ? 1 : 0)
        if let activityId { w.string(activityId) }
        return w.bytes
    }

    init(userId: String, deviceId: String, activityId: String?) {
        self.userId = userId
        self.deviceId = deviceId
        self.activityId = activityId
    }

    init(decoding bytes: [UInt8]) throws(StoredValueError) {
        var r = try ByteReader(bytes, what: "token owner", versions: 1...1)
        userId = try r.string()
        deviceId = try r.string()
        activityId = try r.byte() != 0 ? try r.string() : nil
        try r.finish()
    }
}

/// `tombstones`: a sign-out that carried a sequence.
struct TombstoneValue: Hashable {
    var sequence: UInt64
    var deletedAt: Timestamp

    func encoded() -> [UInt8] {
        var w = ByteWriter(version: 1)
        w.varint(sequence)
        w.timestamp(deletedAt)
        return w.bytes
    }

    init(sequence: UInt64, deletedAt: Timestamp) {
        self.sequence = sequence
        self.deletedAt = deletedAt
    }

    init(decoding bytes: [UInt8]) throws(StoredValueError) {
        var r = try ByteReader(bytes, what: "tombstone", versions: 1...1)
        sequence = try r.varint()
        deletedAt = try r.timestamp()
        try r.finish()
    }
}
