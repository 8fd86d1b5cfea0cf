import RegistryCore
import Foundation
import LMDB

/// The LMDB store's reads (the writes are `RuleStore`'s, over `writing`).
extension LMDBRegistryStore {
    public func device(userId: String, appId: String, deviceId: String) throws -> DeviceRecord? {
        try reading { read in try read.recordID(userId, appId: appId, deviceId).flatMap { try read.record($0) } }
    }

    public func devices(userId: String, appId: String?) throws -> [DeviceRecord] {
        try reading { read in try read.records(of: userId, appId: appId) }
    }

    public func devices(userIds: [String], appId: String?) throws -> [UserDevices] {
        try reading { read in
            try UserDevices.distinctByBytes(userIds).compactMap { user in
                let records = try read.records(of: user, appId: appId)
                return records.isEmpty ? nil : UserDevices(userId: user, devices: records)
            }
        }
    }

    public func history(userId: String, limit: Int) throws -> [HistoryEvent] {
        try reading { try $0.history(of: userId, limit: min(max(limit, 1), HistoryEvent.maxPerUser)) }
    }

    /// One page of an activity's fan-out, in key order. With `appId`, only
    /// that app's tokens (an app never written has none); the cursor still
    /// names the last key visited, so a filtered walk resumes the same way.
    /// A value that does not open is passed over and counted (`unreadable`).
    public func activityTokens(activityId: String, appId: String?, limit: Int, cursor: String?) throws -> ActivityTokenPage {
        let prefix = StoreKey.parts(activityId)
        var start = prefix
        if let cursor {
            guard let decoded = ActivityCursor.decode(cursor, activity: activityId, secret: cursorSecret) else {
                throw RegistryError.invalidField(field: "cursor", message: "is not a cursor this registry issued for this activity")
            }
            start = prefix + decoded.after.key
        }
        let resumeAfter = cursor == nil ? nil : start
        let pageSize = min(max(limit, 1), 1_000)
        return try reading { read in
            var appCode: String?
            if let appId {
                guard let code = try read.apps.existingCode(appId, read.txn) else {
                    return ActivityTokenPage(tokens: [], nextCursor: nil)
                }
                appCode = code
            }
            var tokens: [ActivityToken] = []
            var lastKey: [UInt8]?
            var more = false
            var unreadable = 0
            var names = AppCatalog.Names(read.apps)
            try read.txn.scan(schema.activityTokens, prefix: prefix, from: start) { key, value in
                if key == resumeAfter { return true }
                guard let parts = StoreKey.activityTokenParts(key) else {
                    throw StoredValueError(what: "activity token key", reason: "malformed")
                }
                if let appCode, parts.id.app != appCode { return true }
                // A page is `pageSize` entries visited, unreadable ones included (as on PostgreSQL).
                if tokens.count + unreadable == pageSize {
                    more = true
                    return false
                }
                lastKey = key
                let token: TokenValue
                do {
                    token = try TokenValue(decoding: value, in: TokenSlot(.activity, key: key), read.vault)
                } catch is StoredValueError {
                    unreadable += 1
                    return true
                }
                tokens.append(ActivityToken(activityId: activityId, userId: parts.id.user, deviceId: parts.id.device,
                                            token: token.token, environment: token.environment,
                                            lastSeenAt: token.updatedAt, appId: try names.appId(parts.id.app, read.txn)))
                return true
            }
            let next = more ? lastKey.flatMap(StoreKey.activityTokenParts).map { ActivityCursor(after: $0.id) } : nil
            return ActivityTokenPage(tokens: tokens, nextCursor: next?.encode(activity: activityId, secret: cursorSecret),
                                     unreadable: unreadable)
        }
    }

    public func stats() throws -> StoreStats {
        try reading { read in try Self.stats(read.txn, schema, environment) }
    }

    /// The counts, which open no token (so no token key is needed).
    static func stats(_ txn: ReadTransaction, _ schema: Schema, _ environment: Environment) throws -> StoreStats {
        let info = try environment.info
        var lastSweep: Timestamp?
        if let bytes = try txn.get(Schema.MetaKey.lastSweepAt, in: schema.meta) {
            var reader = try ByteReader(bytes, what: "lastSweepAt", versions: 1...1)
            lastSweep = try reader.timestamp()
        }
        return StoreStats(
            devices: try txn.count(in: schema.devices),
            pushTokens: try txn.count(in: schema.pushTokens),
            pushToStartTokens: try txn.count(in: schema.pushToStart),
            activityTokens: try txn.count(in: schema.activityTokens),
            tombstones: try txn.count(in: schema.tombstones),
            historyEvents: try txn.count(in: schema.history),
            reservedBytes: info.mapSizeBytes, usedBytes: info.usedBytes, lastSweepAt: lastSweep)
    }

    /// The registry's counts without its token keys (they open no token):
    /// `registryd stats` where the key file is missing, on a backup say.
    /// Refuses an environment this build has not migrated (a migration
    /// needs the keys), so it adds nothing to it.
    public static func statsWithoutTokenKeys(directory: String) throws -> StoreStats {
        let environment = try Environment(Environment.Configuration(path: directory, maxDatabases: 32))
        defer { environment.close() }
        let meta = try environment.openDatabase("meta")
        let found = try environment.read { txn -> UInt64 in
            guard let stored = try txn.get(Schema.MetaKey.schemaVersion, in: meta) else { return 0 }
            var reader = try ByteReader(stored, what: "schema version", versions: 1...1)
            return try reader.varint()
        }
        guard found == Schema.version else { throw RegistryOpenError.schemaMismatch(found: found, expected: Schema.version) }
        let schema = try Schema(environment)
        return try environment.read { txn in try stats(txn, schema, environment) }
    }

    public func storedApps() throws -> [String] {
        try reading { read in try read.apps.all(read.txn) }
    }
}
