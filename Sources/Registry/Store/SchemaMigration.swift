import LMDB

/// Brings an environment written by an older schema up to `Schema.version`
/// at open, in bounded transactions, before anything else reads it.
///
/// 1 → 2: every device value gains its stored `activityCount`, counted from
/// `deviceActivities`. Each step rewrites at most `batchSize` devices, so a
/// large registry never holds one huge transaction; the new version is
/// written last, so a migration stopped half-way (a crash) simply runs
/// again at the next open and skips what it already rewrote.
struct SchemaMigration {
    let environment: Environment
    let schema: Schema
    var batchSize = 1_000

    func run() throws {
        let found = try environment.read { txn -> UInt64? in
            guard let stored = try txn.get(Schema.MetaKey.schemaVersion, in: schema.meta) else { return nil }
            var reader = try ByteReader(stored, what: "schema version", versions: 1...1)
            return try reader.varint()
        }
        guard let found else {
            try writeVersion()
            return
        }
        guard found <= Schema.version else {
            throw RegistryOpenError.schemaMismatch(found: found, expected: Schema.version)
        }
        if found < 2 { try countActivities() }
        if found < Schema.version { try writeVersion() }
    }

    private func writeVersion() throws {
        try environment.write { txn in
            var w = ByteWriter(version: 1)
            w.varint(Schema.version)
            try txn.put(w.bytes, for: Schema.MetaKey.schemaVersion, in: schema.meta)
        }
    }

    /// Rewrites version 1 device values with their activity count.
    private func countActivities() throws {
        var resume: [UInt8]? = []
        while let start = resume {
            resume = try environment.write { txn -> [UInt8]? in
                let read = RecordReader(txn: txn, schema: schema)
                var pending: [([UInt8], DeviceValue)] = []
                var next: [UInt8]?
                try txn.scan(schema.devices, from: start.isEmpty ? nil : start) { key, value in
                    if pending.count == batchSize {
                        next = key
                        return false
                    }
                    pending.append((key, try DeviceValue(decoding: value)))
                    return true
                }
                for (key, value) in pending where value.needsActivityCount {
                    guard let parts = StoreKey.decode(key), parts.count == 2 else {
                        throw StoredValueError(what: "device key", reason: "malformed")
                    }
                    var migrated = value
                    migrated.activityCount = try read.activities(parts[0], parts[1]).count
                    try txn.put(migrated.encoded(), for: key, in: schema.devices)
                }
                return next
            }
        }
    }
}
