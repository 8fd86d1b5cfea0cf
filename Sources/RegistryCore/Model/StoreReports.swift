/// What a sweep removed (or, on a dry run, would remove). Tokens removed
/// together with their device are counted too.
public struct SweepCounts: Hashable, Sendable {
    public var devices: Int
    public var pushToStartTokens: Int
    public var activityTokens: Int
    public var tombstones: Int

    public init(devices: Int = 0, pushToStartTokens: Int = 0, activityTokens: Int = 0, tombstones: Int = 0) {
        self.devices = devices
        self.pushToStartTokens = pushToStartTokens
        self.activityTokens = activityTokens
        self.tombstones = tombstones
    }

    public static func + (a: SweepCounts, b: SweepCounts) -> SweepCounts {
        SweepCounts(devices: a.devices + b.devices,
                    pushToStartTokens: a.pushToStartTokens + b.pushToStartTokens,
                    activityTokens: a.activityTokens + b.activityTokens,
                    tombstones: a.tombstones + b.tombstones)
    }
}

/// Record counts and storage use, for `/internal/v1/stats` and `/metrics`.
public struct StoreStats: Hashable, Sendable {
    public var devices: Int
    public var pushTokens: Int
    public var pushToStartTokens: Int
    public var activityTokens: Int
    public var tombstones: Int
    /// Token history events kept (API v1.1, docs/api.md).
    public var historyEvents: Int
    /// Bytes the store has reserved for its data: LMDB's map size (what it
    /// can hold before the map grows), PostgreSQL's database size. The API
    /// calls it `mapSizeBytes`.
    public var reservedBytes: Int
    /// Bytes of `reservedBytes` holding data (on PostgreSQL, all of them).
    public var usedBytes: Int
    public var lastSweepAt: Timestamp?

    public init(devices: Int, pushTokens: Int, pushToStartTokens: Int, activityTokens: Int,
                tombstones: Int, historyEvents: Int = 0, reservedBytes: Int, usedBytes: Int, lastSweepAt: Timestamp?) {
        self.historyEvents = historyEvents
        self.devices = devices
        self.pushTokens = pushTokens
        self.pushToStartTokens = pushToStartTokens
        self.activityTokens = activityTokens
        self.tombstones = tombstones
        self.reservedBytes = reservedBytes
        self.usedBytes = usedBytes
        self.lastSweepAt = lastSweepAt
    }
}

/// Group-commit observations, for `/metrics`: called by the writer thread
/// after each batch commits (or fails).
public struct CommitBatchReport: Sendable {
    public var commands: Int
    public var succeeded: Bool
    public var seconds: Double

    public init(commands: Int, succeeded: Bool, seconds: Double) {
        self.commands = commands
        self.succeeded = succeeded
        self.seconds = seconds
    }
}

/// One bounded step of a sweep (or dry run), for `/metrics`: how long the
/// step held its transaction.
public struct SweepBatchReport: Sendable {
    public var dryRun: Bool
    public var seconds: Double
    /// What the step removed (or, in a dry run, would remove).
    public var counts: SweepCounts

    public init(dryRun: Bool, seconds: Double, counts: SweepCounts) {
        self.dryRun = dryRun
        self.seconds = seconds
        self.counts = counts
    }
}

/// One user's devices in a batch lookup.
public struct UserDevices: Hashable, Sendable {
    public var userId: String
    public var devices: [DeviceRecord]

    public init(userId: String, devices: [DeviceRecord]) {
        self.userId = userId
        self.devices = devices
    }

    /// `ids` without repeats, in UTF-8 byte order, compared as bytes: two
    /// canonically equivalent ids (NFC and NFD "é") stay two users.
    public static func distinctByBytes(_ ids: [String]) -> [String] {
        var seen = Set<[UInt8]>()
        return ids.map { (Array($0.utf8), $0) }
            .filter { seen.insert($0.0).inserted }
            .sorted { $0.0.lexicographicallyPrecedes($1.0) }
            .map(\.1)
    }
}
