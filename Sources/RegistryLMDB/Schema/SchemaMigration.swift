import RegistryCore
import Crypto
import LMDB

/// Brings an environment written by an older schema up to `Schema.version`
/// at open, in bounded transactions, before anything else reads it.
///
/// 1 → 2: every device value gains its stored `activityCount`, counted from
/// `deviceActivities`.
///
/// 2 → 3: records move from the schema 2 databases (`LegacySchema`) into
/// the `v3.` ones: keys gain the app (every record lands under `default`),
/// tokens are sealed, owner entries are keyed by HMAC instead of SHA-256,
/// and expiry entries follow their records. Each step moves at most
/// `batchSize` devices (with their tokens) or tombstones and deletes their
/// old entries in the same transaction, so a migration stopped half-way (a
/// crash) resumes at the next open where it stopped. Entries no record
/// backs (an inconsistent schema 2 index) are dropped with the old
/// databases at the end.
///
/// 3 → 4: every sealed value is sealed again bound to its slot (its kind
/// and the key it is stored under: `TokenSlot`), in bounded transactions;
/// a value already bound is left alone, so a stopped migration resumes.
///
/// 4 → 5: nothing to move: `v3.ownerCleanup` is opened (created empty)
/// with the other databases.
///
/// 5 → 6: nothing to move: the delivery queue's version 1 values are read
/// as they are (`DeliveryValues`), new ones are written as version 2.
///
/// 6 → 7: every `delivery.due` key gains its notification's priority rank
/// in front (`DeliveryKey.due`), `batchSize` keys per transaction; a key
/// already moved is recognised by its length, so a stopped migration
/// resumes. Notification values are read as they are (version 3 adds the
/// cancelled flag).
///
/// The new version is written last.
struct SchemaMigration {
    let environment: Environment
    let schema: Schema
    let vault: TokenVault
    let apps: AppCatalog
    var batchSize = 500

    /// Returns whether an older schema was migrated (then its plaintext
    /// pages are free but still in the file: `meta` marks the compaction
    /// pending, and the caller compacts it).
    @discardableResult
    func run() throws -> Bool {
        let found = try environment.read { txn -> UInt64? in
            guard let stored = try txn.get(Schema.MetaKey.schemaVersion, in: schema.meta) else { return nil }
            var reader = try ByteReader(stored, what: "schema version", versions: 1...1)
            return try reader.varint()
        }
        guard let found else {
            try writeVersion()
            return false
        }
        guard found <= Schema.version else {
            throw RegistryOpenError.schemaMismatch(found: found, expected: Schema.version)
        }
        guard found < Schema.version else { return false }
        if found < 3 {
            let legacy = try LegacySchema(environment)
            if found < 2 { try countActivities(legacy) }
            try moveToVersion3(legacy)
            try environment.write { txn in
                for db in legacy.all { try txn.empty(db) }
            }
        }
        // Values the move above wrote are bound already; this finds those of schema 3.
        if found < 4 { try bindSealedValues() }
        if found < 7 { try rankDueDeliveries() }
        try writeVersion(compactionPending: found < 3)
        return true
    }

    /// Seals every value sealed bound to its kind only (schema 3) again,
    /// bound to its slot, `batchSize` values per transaction.
    private func bindSealedValues() throws {
        for kind in TokenKind.allCases {
            let db = schema.database(kind)
            var resume: [UInt8]? = []
            while let start = resume {
                resume = try environment.write { txn -> [UInt8]? in
                    var batch: [([UInt8], [UInt8])] = []
                    var next: [UInt8]?
                    try txn.scan(db, from: start.isEmpty ? nil : start) { key, value in
                        if batch.count == batchSize {
                            next = key
                            return false
                        }
                        batch.append((key, value))
                        return true
                    }
                    for (key, value) in batch where vault.isUnbound(try TokenValue.sealed(in: value)) {
                        let token = try TokenValue(decodingUnbound: value, kind, vault)
                        try txn.put(token.encoded(in: TokenSlot(kind, key: key), vault), for: key, in: db)
                    }
                    return next
                }
            }
        }
    }

    /// Rewrites schema 6 `due` keys (a time, the item) as schema 7's (the
    /// priority rank first), `batchSize` per transaction.
    private func rankDueDeliveries() throws {
        let delivery = try DeliverySchema(environment)
        let oldLength = 8 + 16 + 4
        while try environment.write({ txn -> Bool in
            var batch: [[UInt8]] = []
            try txn.scan(delivery.due) { key, _ in
                if key.count == oldLength { batch.append(key) }
                return batch.count < batchSize
            }
            for key in batch {
                let item = DeliveryKey.item(inTimed: key)
                _ = try txn.delete(key, in: delivery.due)
                // A key whose notification is gone has nothing left to send.
                guard let notification = try LMDBRegistryStore.notification(txn, delivery, Array(item.prefix(16))) else { continue }
                try txn.put([], for: DeliveryKey.due(notification.priority, DeliveryKey.time(of: key), item), in: delivery.due)
            }
            return batch.count == batchSize
        }) {}
    }

    /// The new version, with (after a migration from plaintext tokens) the
    /// mark that the file still needs compacting, in one commit: a start
    /// cut off before its compaction finishes compacts at the next open.
    private func writeVersion(compactionPending: Bool = false) throws {
        try environment.write { txn in
            var w = ByteWriter(version: 1)
            w.varint(Schema.version)
            try txn.put(w.bytes, for: Schema.MetaKey.schemaVersion, in: schema.meta)
            if compactionPending { try txn.put([1], for: Schema.MetaKey.compactionPending, in: schema.meta) }
        }
    }

    /// Rewrites version 1 device values with their activity count.
    private func countActivities(_ legacy: LegacySchema) throws {
        var resume: [UInt8]? = []
        while let start = resume {
            resume = try environment.write { txn -> [UInt8]? in
                var pending: [([UInt8], DeviceValue)] = []
                var next: [UInt8]?
                try txn.scan(legacy.devices, from: start.isEmpty ? nil : start) { key, value in
                    if pending.count == batchSize {
                        next = key
                        return false
                    }
                    pending.append((key, try DeviceValue(decoding: value)))
                    return true
                }
                for (key, value) in pending where value.needsActivityCount {
                    var migrated = value
                    var count = 0
                    try txn.scan(legacy.deviceActivities, prefix: key) { _, _ in
                        count += 1
                        return true
                    }
                    migrated.activityCount = count
                    try txn.put(migrated.encoded(), for: key, in: legacy.devices)
                }
                return next
            }
        }
    }

    /// Moves every device (with its tokens) and every tombstone, a batch per
    /// transaction, from the front of the old databases (what is moved is
    /// deleted, so the front is always what is left).
    private func moveToVersion3(_ legacy: LegacySchema) throws {
        for db in [legacy.devices, legacy.tombstones] {
            var more = true
            while more {
                more = try environment.write { txn -> Bool in
                    var writer = RecordWriter(txn: txn, schema: schema, vault: vault, apps: apps, now: Timestamp(milliseconds: 0))
                    writer.restoring = true
                    var keys: [([UInt8], [UInt8])] = []
                    try txn.scan(db) { key, value in
                        keys.append((key, value))
                        return keys.count < batchSize
                    }
                    for (key, value) in keys {
                        if db == legacy.devices {
                            try moveDevice(key, value, legacy, writer)
                        } else {
                            try moveTombstone(key, value, legacy, writer)
                        }
                    }
                    return keys.count == batchSize
                }
            }
        }
    }

    private func moveDevice(_ key: [UInt8], _ bytes: [UInt8], _ legacy: LegacySchema, _ writer: RecordWriter) throws {
        let txn = writer.txn
        try txn.delete(key, in: legacy.devices)
        guard let parts = StoreKey.decode(key), parts.count == 2 else { return }
        let id = try writer.recordID(parts[0], appId: Identifier.defaultAppId, parts[1])
        var device = try DeviceValue(decoding: bytes)
        try txn.delete(ExpiryKey(at: device.lastSeenAt, kind: .device, recordKey: key).bytes, in: legacy.expiry)
        // Counted again by putActivityToken, one per token actually moved.
        device.activityCount = 0
        try writer.save(id, device, previous: nil)
        for kind in [TokenKind.push, .pushToStart] {
            guard let stored = try txn.get(key, in: legacy.database(kind)) else { continue }
            try txn.delete(key, in: legacy.database(kind))
            let token = try TokenValue(decodingPlaintext: stored)
            try txn.delete(SHA256.hash(Array(token.token.utf8)) + [kind.rawValue], in: legacy.tokenOwners)
            try writer.putToken(kind, id, token)
        }
        var activities: [([UInt8], String)] = []
        try txn.scan(legacy.deviceActivities, prefix: key) { entry, _ in
            if let parts = StoreKey.decode(entry), parts.count == 3 { activities.append((entry, parts[2])) }
            return true
        }
        for (entry, activity) in activities {
            try txn.delete(entry, in: legacy.deviceActivities)
            let oldKey = StoreKey.parts(activity, parts[0], parts[1])
            guard let stored = try txn.get(oldKey, in: legacy.activityTokens) else { continue }
            try txn.delete(oldKey, in: legacy.activityTokens)
            let token = try TokenValue(decodingPlaintext: stored)
            try txn.delete(ExpiryKey(at: token.updatedAt, kind: .activityToken, recordKey: oldKey).bytes, in: legacy.expiry)
            try txn.delete(SHA256.hash(Array(token.token.utf8)) + [TokenKind.activity.rawValue], in: legacy.tokenOwners)
            try writer.putActivityToken(activity, id, token)
        }
    }

    private func moveTombstone(_ key: [UInt8], _ bytes: [UInt8], _ legacy: LegacySchema, _ writer: RecordWriter) throws {
        let txn = writer.txn
        try txn.delete(key, in: legacy.tombstones)
        guard let parts = StoreKey.decode(key), parts.count == 2 else { return }
        let id = try writer.recordID(parts[0], appId: Identifier.defaultAppId, parts[1])
        let tombstone = try TombstoneValue(decoding: bytes)
        try txn.delete(ExpiryKey(at: tombstone.deletedAt, kind: .tombstone, recordKey: key).bytes, in: legacy.expiry)
        try txn.put(tombstone.encoded(), for: id.key, in: schema.tombstones)
        try writer.moveExpiry(.tombstone, id.key, from: nil, to: tombstone.deletedAt)
    }
}

/// The schema 2 databases (keys (user, device), plaintext tokens, owner
/// entries keyed by SHA-256), opened only to migrate them.
struct LegacySchema {
    let devices: Database
    let pushTokens: Database
    let pushToStart: Database
    let activityTokens: Database
    let deviceActivities: Database
    let tokenOwners: Database
    let expiry: Database
    let tombstones: Database

    init(_ env: Environment) throws {
        devices = try env.openDatabase("devices")
        pushTokens = try env.openDatabase("pushTokens")
        pushToStart = try env.openDatabase("pushToStart")
        activityTokens = try env.openDatabase("activityTokens")
        deviceActivities = try env.openDatabase("deviceActivities")
        tokenOwners = try env.openDatabase("tokenOwners")
        expiry = try env.openDatabase("expiry")
        tombstones = try env.openDatabase("tombstones")
    }

    var all: [Database] {
        [devices, pushTokens, pushToStart, activityTokens, deviceActivities, tokenOwners, expiry, tombstones]
    }

    func database(_ kind: TokenKind) -> Database {
        switch kind {
        case .push: pushTokens
        case .pushToStart: pushToStart
        case .activity: activityTokens
        }
    }
}
