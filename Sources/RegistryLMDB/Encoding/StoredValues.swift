import RegistryCore

/// The LMDB store's values: each record type of `RegistryCore` in a
/// compact versioned binary encoding (version byte first), so a later
/// schema can read old records and migrate them.

/// `devices`: the record without its tokens.
///
/// Version 2 added `activityCount`, kept in step with `deviceActivities` so
/// that reads, sign-out and the activity cap never scan. A version 1 value
/// decodes with `activityCount` 0 and `needsActivityCount` set; the schema
/// migration at open (`SchemaMigration`) rewrites every one of them.
package extension DeviceValue {
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

    /// From an array, or in place in LMDB's map (a lookup's scan).
    init<Bytes: RandomAccessCollection<UInt8>>(decoding bytes: Bytes) throws(StoredValueError) where Bytes.Index == Int {
        var r = try ByteReader(bytes, what: "device", versions: 1...2)
        let platform = try r.enumValue(Platform.self, Platform.allCases)
        let environment = try r.enumValue(APNsEnvironment.self, APNsEnvironment.allCases)
        let flags = try r.byte()
        let createdAt = try r.timestamp()
        let lastSeenAt = try r.timestamp()
        let osVersion = flags & 1 != 0 ? try r.string() : nil
        let appVersion = flags & 2 != 0 ? try r.string() : nil
        let sequence = flags & 4 != 0 ? try r.varint() : nil
        var activityCount = 0
        if r.version >= 2 {
            let count = try r.varint()
            guard count <= UInt64(Int32.max) else { throw StoredValueError(what: "device", reason: "activity count out of range") }
            activityCount = Int(count)
        }
        try r.finish()
        self.init(platform: platform, environment: environment, osVersion: osVersion, appVersion: appVersion,
                  createdAt: createdAt, lastSeenAt: lastSeenAt, sequence: sequence, activityCount: activityCount,
                  needsActivityCount: r.version < 2)
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
package extension TokenValue {
    func encoded(in slot: TokenSlot, _ vault: TokenVault) throws(RegistryError) -> [UInt8] {
        var w = ByteWriter(version: 2)
        w.byte(UInt8(APNsEnvironment.allCases.firstIndex(of: environment)!))
        w.timestamp(updatedAt)
        w.blob(try sealed(in: slot, vault))
        return w.bytes
    }

    init(decoding bytes: [UInt8], in slot: TokenSlot, _ vault: TokenVault) throws {
        let (environment, updatedAt, sealed) = try Self.fields(of: bytes)
        self.init(token: try vault.open(sealed, in: slot), environment: environment, updatedAt: updatedAt,
                  sealedAs: (slot, sealed))
    }

    /// The token of a value in place in LMDB's map, opened, without the
    /// sealed bytes a write would reuse (a lookup's scan: nothing copied
    /// but the token itself).
    static func opened(inPlace bytes: UnsafeRawBufferPointer, in slot: TokenSlot,
                       _ vault: TokenVault) throws -> StoredToken {
        let (environment, updatedAt, sealed) = try fields(of: bytes)
        return StoredToken(token: try vault.open(UnsafeRawBufferPointer(rebasing: sealed), in: slot),
                           environment: environment, updatedAt: updatedAt)
    }

    /// A stored value's environment, time and sealed bytes (unopened).
    private static func fields<Bytes: RandomAccessCollection<UInt8>>(of bytes: Bytes) throws(StoredValueError)
        -> (APNsEnvironment, Timestamp, Bytes.SubSequence) where Bytes.Index == Int {
        var r = try ByteReader(bytes, what: "token", versions: 2...2)
        let environment = try r.enumValue(APNsEnvironment.self, APNsEnvironment.allCases)
        let updatedAt = try r.timestamp()
        let sealed = try r.blob()
        try r.finish()
        return (environment, updatedAt, sealed)
    }

    /// A value of schema 3, sealed bound to its kind only (the migration to schema 4).
    init(decodingUnbound bytes: [UInt8], _ kind: TokenKind, _ vault: TokenVault) throws {
        var r = try ByteReader(bytes, what: "token", versions: 2...2)
        let environment = try r.enumValue(APNsEnvironment.self, APNsEnvironment.allCases)
        let updatedAt = try r.timestamp()
        let token = try vault.openUnbound(try r.blob(), kind)
        try r.finish()
        self.init(token: token, environment: environment, updatedAt: updatedAt)
    }

    /// A version 1 value (schema 2: the token in plaintext).
    init(decodingPlaintext bytes: [UInt8]) throws(StoredValueError) {
        var r = try ByteReader(bytes, what: "token", versions: 1...1)
        let environment = try r.enumValue(APNsEnvironment.self, APNsEnvironment.allCases)
        let updatedAt = try r.timestamp()
        let token = try r.string()
        try r.finish()
        self.init(token: token, environment: environment, updatedAt: updatedAt)
    }

    /// The sealed bytes of a stored value, unopened (rotation, check, migration).
    static func sealed(in bytes: [UInt8]) throws(StoredValueError) -> ArraySlice<UInt8> {
        try fields(of: bytes).2
    }

    /// The environment of a stored value, without opening it (an operator's counts).
    static func environment(in bytes: [UInt8]) throws(StoredValueError) -> APNsEnvironment {
        var r = try ByteReader(bytes, what: "token", versions: 2...2)
        return try r.enumValue(APNsEnvironment.self, APNsEnvironment.allCases)
    }

    /// The sealing key id of a stored value, without opening it (rotation, check).
    static func sealingKeyID(of bytes: [UInt8], _ vault: TokenVault) throws(StoredValueError) -> UInt8? {
        vault.keyID(of: try sealed(in: bytes))
    }
}

/// `tokenOwners`: where a token is held. Version 2 (schema 3) names the
/// record by (user, app code, device).
package extension TokenHolder {
    func encoded() -> [UInt8] {
        var w = ByteWriter(version: 2)
        w.string(id.user)
        w.string(id.app)
        w.string(id.device)
        w.byte(activityId != nil ? 1 : 0)
        if let activityId { w.string(activityId) }
        return w.bytes
    }

    init(decoding bytes: [UInt8]) throws(StoredValueError) {
        var r = try ByteReader(bytes, what: "token owner", versions: 2...2)
        let user = try r.string(), app = try r.string(), device = try r.string()
        let activityId = try r.byte() != 0 ? try r.string() : nil
        try r.finish()
        self.init(id: RecordID(user: user, app: app, device: device), activityId: activityId)
    }
}

/// `tombstones`: a sign-out that carried a sequence.
package extension TombstoneValue {
    func encoded() -> [UInt8] {
        var w = ByteWriter(version: 1)
        w.varint(sequence)
        w.timestamp(deletedAt)
        return w.bytes
    }

    init(decoding bytes: [UInt8]) throws(StoredValueError) {
        var r = try ByteReader(bytes, what: "tombstone", versions: 1...1)
        let sequence = try r.varint()
        let deletedAt = try r.timestamp()
        try r.finish()
        self.init(sequence: sequence, deletedAt: deletedAt)
    }
}

/// `history`: one event of a user's token history (the user is in the key;
/// the app as its code), with the token's 12-hex-digit fingerprint, never the token.
package struct HistoryValue: Hashable {
    package var at: Timestamp
    package var app: String
    package var device: String
    package var kind: HistoryEvent.Kind
    package var activityId: String?
    package var action: HistoryEvent.Action
    package var reason: HistoryEvent.Reason?
    package var feedbackReason: FeedbackReason?
    package var fingerprint: String

    package func encoded() -> [UInt8] {
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

    package init(at: Timestamp, app: String, device: String, kind: HistoryEvent.Kind, activityId: String?,
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

    package init(decoding bytes: [UInt8]) throws(StoredValueError) {
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
