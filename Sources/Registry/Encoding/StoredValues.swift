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

/// `pushTokens`, `pushToStart`, `activityTokens`: one token, sealed
/// (`TokenVault`) in the stored value and bound to its slot (its kind and
/// the key it is stored under); plaintext only in memory.
///
/// Version 2 (schema 3) seals the token; version 1 (plaintext) is read only
/// by the schema migration, through `init(decodingPlaintext:)`. Schema 4
/// binds the sealed value to its slot (`TokenSealer` format 2); a value of
/// schema 3 (bound to its kind only) is read only by the migration, through
/// `init(decodingUnbound:_:_:)`.
struct TokenValue: Hashable {
    var token: String {
        didSet { sealedAs = nil }
    }
    var environment: APNsEnvironment
    /// The last time a registration carried it.
    var updatedAt: Timestamp
    /// The sealed bytes this value was read from, with their slot: a
    /// re-registration that only refreshes `updatedAt` writes them back
    /// instead of sealing the same token again (while they are under the
    /// current key, in the same slot). Not part of equality.
    private var sealedAs: (slot: TokenSlot, bytes: ArraySlice<UInt8>)?

    static func == (a: TokenValue, b: TokenValue) -> Bool {
        a.token == b.token && a.environment == b.environment && a.updatedAt == b.updatedAt
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(token)
        hasher.combine(environment)
        hasher.combine(updatedAt)
    }

    func encoded(in slot: TokenSlot, _ vault: TokenVault) throws(RegistryError) -> [UInt8] {
        var w = ByteWriter(version: 2)
        w.byte(UInt8(APNsEnvironment.allCases.firstIndex(of: environment)!))
        w.timestamp(updatedAt)
        if let sealedAs, sealedAs.slot == slot, vault.keyID(of: sealedAs.bytes) == vault.ring.currentKeyID {
            w.blob(Array(sealedAs.bytes))
        } else {
            w.blob(try vault.seal(token, in: slot))
        }
        return w.bytes
    }

    init(token: String, environment: APNsEnvironment, updatedAt: Timestamp) {
        self.token = token
        self.environment = environment
        self.updatedAt = updatedAt
    }

    init(decoding bytes: [UInt8], in slot: TokenSlot, _ vault: TokenVault) throws {
        var r = try ByteReader(bytes, what: "token", versions: 2...2)
        environment = try r.enumValue(APNsEnvironment.self, APNsEnvironment.allCases)
        updatedAt = try r.timestamp()
        let sealed = try r.blob()
        token = try vault.open(sealed, in: slot)
        sealedAs = (slot, sealed)
        try r.finish()
    }

    /// A value of schema 3, sealed bound to its kind only (the migration to schema 4).
    init(decodingUnbound bytes: [UInt8], _ kind: TokenKind, _ vault: TokenVault) throws {
        var r = try ByteReader(bytes, what: "token", versions: 2...2)
        environment = try r.enumValue(APNsEnvironment.self, APNsEnvironment.allCases)
        updatedAt = try r.timestamp()
        token = try vault.openUnbound(try r.blob(), kind)
        try r.finish()
    }

    /// A version 1 value (schema 2: the token in plaintext).
    init(decodingPlaintext bytes: [UInt8]) throws(StoredValueError) {
        var r = try ByteReader(bytes, what: "token", versions: 1...1)
        environment = try r.enumValue(APNsEnvironment.self, APNsEnvironment.allCases)
        updatedAt = try r.timestamp()
        token = try r.string()
        try r.finish()
    }

    /// The sealed bytes of a stored value, unopened (rotation, check, migration).
    static func sealed(in bytes: [UInt8]) throws(StoredValueError) -> ArraySlice<UInt8> {
        var r = try ByteReader(bytes, what: "token", versions: 2...2)
        _ = try r.byte()
        _ = try r.timestamp()
        return try r.blob()
    }

    /// The sealing key id of a stored value, without opening it (rotation, check).
    static func sealingKeyID(of bytes: [UInt8], _ vault: TokenVault) throws(StoredValueError) -> UInt8? {
        vault.keyID(of: try sealed(in: bytes))
    }
}

/// `tokenOwners`: where a token is held. Version 2 (schema 3) names the
/// record by (user, app code, device).
struct OwnerValue: Hashable {
    var id: RecordID
    /// Set for activity tokens only.
    var activityId: String?

    func encoded() -> [UInt8] {
        var w = ByteWriter(version: 2)
        w.string(id.user)
        w.string(id.app)
        w.string(id.device)
        w.byte(activityId != nil ? 1 : 0)
        if let activityId { w.string(activityId) }
        return w.bytes
    }

    init(id: RecordID, activityId: String?) {
        self.id = id
        self.activityId = activityId
    }

    init(decoding bytes: [UInt8]) throws(StoredValueError) {
        var r = try ByteReader(bytes, what: "token owner", versions: 2...2)
        let user = try r.string(), app = try r.string(), device = try r.string()
        id = RecordID(user: user, app: app, device: device)
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

/// `history`: one event of a user's token history (the user is in the key;
/// the app as its code), with the token's 12-hex-digit fingerprint, never the token.
struct HistoryValue: Hashable {
    var at: Timestamp
    var app: String
    var device: String
    var kind: HistoryEvent.Kind
    var activityId: String?
    var action: HistoryEvent.Action
    var reason: HistoryEvent.Reason?
    var feedbackReason: FeedbackReason?
    var fingerprint: String

    func encoded() -> [UInt8] {
        var w = ByteWriter(version: 1)
        w.timestamp(at)
        w.string(app)
        w.string(device)
        w.byte(UInt8(HistoryEvent.Kind.allCases.firstIndex(of: kind)!))
        w.byte(UInt8(HistoryEvent.Action.allCases.firstIndex(of: action)!))
        w.byte(reason.map { UInt8(HistoryEvent.Reason.allCases.firstIndex(of: $0)! + 1) } ?? 0)
        w.byte(feedbackReason.map { UInt8(FeedbackReason.allCases.firstIndex(of: $0)! + 1) } ?? 0)
        w.byte(activityId != nil ? 1 : 0)
        if let activityId { w.string(activityId) }
        w.string(fingerprint)
        return w.bytes
    }

    init(at: Timestamp, app: String, device: String, kind: HistoryEvent.Kind, activityId: String?,
         action: HistoryEvent.Action, reason: HistoryEvent.Reason?, feedbackReason: FeedbackReason?, fingerprint: String) {
        self.at = at
        self.app = app
        self.device = device
        self.kind = kind
        self.activityId = activityId
        self.action = action
        self.reason = reason
        self.feedbackReason = feedbackReason
        self.fingerprint = fingerprint
    }

    init(decoding bytes: [UInt8]) throws(StoredValueError) {
        var r = try ByteReader(bytes, what: "history event", versions: 1...1)
        at = try r.timestamp()
        app = try r.string()
        device = try r.string()
        kind = try r.enumValue(HistoryEvent.Kind.self, HistoryEvent.Kind.allCases)
        action = try r.enumValue(HistoryEvent.Action.self, HistoryEvent.Action.allCases)
        let reasonByte = Int(try r.byte()), feedbackByte = Int(try r.byte())
        guard reasonByte <= HistoryEvent.Reason.allCases.count, feedbackByte <= FeedbackReason.allCases.count else {
            throw StoredValueError(what: "history event", reason: "bad reason")
        }
        reason = reasonByte == 0 ? nil : HistoryEvent.Reason.allCases[reasonByte - 1]
        feedbackReason = feedbackByte == 0 ? nil : FeedbackReason.allCases[feedbackByte - 1]
        activityId = try r.byte() != 0 ? try r.string() : nil
        fingerprint = try r.string()
        try r.finish()
    }
}
