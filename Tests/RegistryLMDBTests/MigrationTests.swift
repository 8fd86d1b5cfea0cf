import Crypto
import Foundation
import LMDB
@testable import RegistryCore
@testable import RegistryLMDB
@testable import RegistryPostgres
import RegistryTestSupport
import Testing

/// Environments written by earlier schemas are brought up to schema 3 at
/// open: schema 2 (plaintext tokens, (user, device) keys, SHA-256 owner
/// index) and schema 1 (device values without `activityCount`, too).
///
/// `LegacyEnvironment` writes them byte for byte as those releases did
/// (their database names and encodings), so the migration is tested
/// against what an upgrading operator's data directory holds.
struct MigrationTests {
    /// 40 devices over 20 users with push tokens; alice/d1 also has a
    /// push-to-start token and three activity tokens; bob/old a tombstone.
    private func writeSchemaTwo(_ directory: String, schema: UInt8 = 2) throws {
        let legacy = try LegacyEnvironment(directory)
        defer { legacy.close() }
        try legacy.write { w in
            for i in 0..<40 {
                try w.device("u\(i % 20)", "d\(i / 20)", lastSeen: 1_767_225_600_000 + Int64(i), schema: schema,
                             activities: 0)
                try w.token(.push, "u\(i % 20)", "d\(i / 20)", apnsToken(i))
            }
            try w.device("alice", "d1", lastSeen: 1_767_225_700_000, schema: schema, activities: 3)
            try w.token(.push, "alice", "d1", apnsToken(1_000))
            try w.token(.pushToStart, "alice", "d1", apnsToken(1_001))
            for a in 0..<3 { try w.activityToken("match-\(a)", "alice", "d1", apnsToken(2_000 + a)) }
            try w.tombstone("bob", "old", sequence: 7, deletedAt: 1_767_225_800_000)
            try w.version(schema)
        }
    }

    @Test(arguments: [UInt8(1), 2])
    func anEarlierSchemaIsMigratedAtOpenWithNothingLost(_ schema: UInt8) async throws {
        let f = try makeStore(); defer { f.close() }
        f.lmdb.shutdown()
        try FileManager.default.removeItem(atPath: f.configuration.directory)
        try writeSchemaTwo(f.configuration.directory, schema: schema)
        try f.reopen()

        #expect(try await f.store.stats().devices == 41)
        #expect(try await f.store.stats().tombstones == 1)
        for i in 0..<40 {
            let d = try await f.store.device(userId: "u\(i % 20)", deviceId: "d\(i / 20)")
            #expect(d?.pushToken?.token == apnsToken(i))
            #expect(d?.appId == "default")
        }
        let alice = try #require(try await f.store.device(userId: "alice", deviceId: "d1"))
        #expect(alice.pushToStartToken?.token == apnsToken(1_001))
        #expect(alice.activityCount == 3)
        #expect(alice.lastSeenAt == Timestamp(milliseconds: 1_767_225_700_000))
        #expect(try await f.store.activityTokens(activityId: "match-2", limit: 10, cursor: nil).tokens.map(\.token) == [apnsToken(2_002)])
        // The owner index was rebuilt under the new keys: feedback finds tokens by value.
        #expect(try await f.store.removeToken(apnsToken(5), reason: .unregistered, registeredBefore: nil) == 1)
        #expect(try await f.store.removeToken(apnsToken(2_001), reason: .unregistered, registeredBefore: nil) == 1)
        // The tombstone still refuses a stale re-registration.
        await #expect(throws: RegistryError.staleWrite) { _ = try await f.store.register("bob", "old", sequence: 6) }
        #expect(try await f.check().isEmpty)

        let version = try f.lmdb.environment.read { txn in try txn.get(Array("schemaVersion".utf8), in: f.lmdb.schema.meta) }
        #expect(version == [1, UInt8(Schema.version)])
        let old = try LegacySchema(f.lmdb.environment)
        let legacy = try f.lmdb.environment.read { txn in try old.all.map { try txn.count(in: $0) } }
        #expect(legacy.allSatisfy { $0 == 0 }, "the old databases are emptied: \(legacy)")
    }

    /// No token of the old plaintext databases survives in the file once
    /// migrated (it is compacted after the migration, so freed pages go),
    /// nor in a backup of it.
    @Test func aMigratedEnvironmentHoldsNoPlaintextToken() async throws {
        let f = try makeStore(); defer { f.close() }
        f.lmdb.shutdown()
        try FileManager.default.removeItem(atPath: f.configuration.directory)
        try writeSchemaTwo(f.configuration.directory)
        let file = f.configuration.directory + "/data.mdb"
        let before = try Array(Data(contentsOf: URL(fileURLWithPath: file)))
        #expect(contains(before, Array(apnsToken(1_000).utf8)), "the schema 2 file holds the token in plaintext")
        try f.reopen()
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToken?.token == apnsToken(1_000))
        let copy = f.directory + "/copy"
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        try f.lmdb.backup(toDirectory: copy)
        f.lmdb.shutdown()
        for path in [file, copy + "/data.mdb"] {
            let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
            for i in [0, 17, 39, 1_000, 1_001, 2_000, 2_002] {
                #expect(!contains(bytes, Array(apnsToken(i).utf8)), "token \(i) in plaintext hex in \(path)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: f.configuration.directory + "/.compacting"))
    }

    /// A start killed (or out of disk) after the migration committed but
    /// before the compacted copy replaced the file: the freed pages still
    /// hold plaintext tokens, so the next start compacts.
    @Test func aMigrationCutOffBeforeItsCompactionIsCompactedAtTheNextOpen() async throws {
        let f = try makeStore(); defer { f.close() }
        f.lmdb.shutdown()
        try FileManager.default.removeItem(atPath: f.configuration.directory)
        try writeSchemaTwo(f.configuration.directory)
        let environment = try Environment(Environment.Configuration(path: f.configuration.directory, maxDatabases: 32))
        let schema = try Schema(environment)
        #expect(try SchemaMigration(environment: environment, schema: schema, vault: TestKeys.vault,
                                    apps: AppCatalog(apps: schema.apps)).run())
        environment.close()
        let file = f.configuration.directory + "/data.mdb"
        let tokens = [0, 17, 39, 1_000, 1_001, 2_000, 2_002]
        func plaintext() throws -> [Int] {
            let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: file)))
            return tokens.filter { contains(bytes, Array(apnsToken($0).utf8)) }
        }
        #expect(try !plaintext().isEmpty, "the cut-off start left plaintext in freed pages")
        try f.reopen()
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToken?.token == apnsToken(1_000))
        f.lmdb.shutdown()
        #expect(try plaintext() == [], "tokens in plaintext hex")
        try f.reopen()
        let pending = try f.lmdb.environment.read { txn in try txn.get(Schema.MetaKey.compactionPending, in: f.lmdb.schema.meta) }
        #expect(pending == nil, "the compaction is done once")
    }

    @Test func aMigrationInSmallBatchesMovesEveryDevice() async throws {
        let f = try makeStore(); defer { f.close() }
        f.lmdb.shutdown()
        try FileManager.default.removeItem(atPath: f.configuration.directory)
        try writeSchemaTwo(f.configuration.directory, schema: 1)
        let environment = try Environment(Environment.Configuration(path: f.configuration.directory, maxDatabases: 32))
        let schema = try Schema(environment)
        var partial = SchemaMigration(environment: environment, schema: schema, vault: TestKeys.vault,
                                      apps: AppCatalog(apps: schema.apps))
        partial.batchSize = 3
        try partial.run()
        environment.close()
        try f.reopen()
        #expect(try await f.store.stats().devices == 41)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.activityCount == 3)
        #expect(try await f.check().isEmpty)
    }

    /// A schema 6 queue (`due` keys without the priority rank) opens as
    /// schema 7 with every queued delivery still claimable, most urgent
    /// first, and nothing left in the old key form.
    @Test func aSchemaSixQueueIsRankedAtOpen() async throws {
        let f = try makeStore(); defer { f.close() }
        for user in ["a", "b", "c", "d", "e"] { try await f.store.register(user, "d", token: user.utf8.first.map(Int.init)) }
        let low = try await f.notify(.users(["a", "b"]), priority: 5).record.id
        f.clock.advance(seconds: 1)
        let urgent = try await f.notify(.users(["c", "d", "e"]), priority: 10).record.id
        f.lmdb.shutdown()
        let environment = try Environment(Environment.Configuration(path: f.configuration.directory, maxDatabases: 32))
        let meta = try environment.openDatabase("meta")
        let due = try environment.openDatabase("delivery.due")
        try environment.write { txn in
            var keys: [[UInt8]] = []
            try txn.scan(due) { key, _ in
                keys.append(key)
                return true
            }
            #expect(keys.count == 5)
            for key in keys {
                _ = try txn.delete(key, in: due)
                try txn.put([], for: Array(key.dropFirst()), in: due)
            }
            try txn.put([1, 6], for: Array("schemaVersion".utf8), in: meta)
        }
        let schema = try Schema(environment)
        var migration = SchemaMigration(environment: environment, schema: schema, vault: TestKeys.vault,
                                        apps: AppCatalog(apps: schema.apps))
        migration.batchSize = 2
        try migration.run()
        environment.close()
        try f.reopen()
        var order: [String] = []
        while let claimed = try await f.deliveries.claim(limit: 1).first { order.append(claimed.delivery.notificationId) }
        #expect(order == [urgent, urgent, urgent, low, low])
    }

    @Test func aNewerSchemaIsRefused() async throws {
        let f = try makeStore(); defer { f.close() }
        f.lmdb.shutdown()
        let environment = try Environment(Environment.Configuration(path: f.configuration.directory))
        let meta = try environment.openDatabase("meta")
        try environment.write { txn in try txn.put([1, 9], for: Array("schemaVersion".utf8), in: meta) }
        environment.close()
        #expect(throws: RegistryOpenError.schemaMismatch(found: 9, expected: Schema.version)) { try f.reopen() }
    }
}

func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, haystack.count >= needle.count else { return false }
    let first = needle[0]
    var i = 0
    while i <= haystack.count - needle.count {
        if haystack[i] == first, haystack[i..<i + needle.count].elementsEqual(needle) { return true }
        i += 1
    }
    return false
}

/// Writes an environment as schema 1 and 2 did: databases `devices`,
/// `pushTokens`, `pushToStart`, `activityTokens`, `deviceActivities`,
/// `tokenOwners` (SHA-256 of the token + kind), `expiry`, `tombstones`,
/// keys (user, device), tokens in plaintext (token value version 1).
struct LegacyEnvironment {
    let environment: Environment
    let legacy: LegacySchema
    let meta: Database

    init(_ directory: String) throws {
        environment = try Environment(Environment.Configuration(path: directory))
        legacy = try LegacySchema(environment)
        meta = try environment.openDatabase("meta")
    }

    func close() { environment.close() }

    func write(_ body: (Writer) throws -> Void) throws {
        try environment.write { txn in try body(Writer(txn: txn, legacy: legacy, meta: meta)) }
    }

    struct Writer {
        let txn: WriteTransaction
        let legacy: LegacySchema
        let meta: Database

        func device(_ user: String, _ device: String, lastSeen: Int64, schema: UInt8, activities: Int) throws {
            let key = StoreKey.parts(user, device)
            let at = Timestamp(milliseconds: lastSeen)
            var value = DeviceValue(platform: .apns, environment: .production, osVersion: "18.2", appVersion: "2.1.0",
                                    createdAt: at, lastSeenAt: at, sequence: 1, activityCount: activities).encoded()
            if schema == 1 { value = [1] + value.dropFirst().dropLast() }
            try txn.put(value, for: key, in: legacy.devices)
            try txn.put([], for: ExpiryKey(at: at, kind: .device, recordKey: key).bytes, in: legacy.expiry)
        }

        private func plaintext(_ token: String, _ at: Timestamp) -> [UInt8] {
            var w = ByteWriter(version: 1)
            w.byte(0)
            w.timestamp(at)
            w.string(token)
            return w.bytes
        }

        private func owner(_ user: String, _ device: String, _ activity: String?) -> [UInt8] {
            var w = ByteWriter(version: 1)
            w.string(user)
            w.string(device)
            w.byte(activity != nil ? 1 : 0)
            if let activity { w.string(activity) }
            return w.bytes
        }

        func token(_ kind: TokenKind, _ user: String, _ device: String, _ token: String) throws {
            let key = StoreKey.parts(user, device)
            try txn.put(plaintext(token, Timestamp(milliseconds: 1_767_225_600_000)), for: key, in: legacy.database(kind))
            try txn.put(owner(user, device, nil), for: SHA256.hash(Array(token.utf8)) + [kind.rawValue], in: legacy.tokenOwners)
        }

        func activityToken(_ activity: String, _ user: String, _ device: String, _ token: String) throws {
            let key = StoreKey.parts(activity, user, device)
            let at = Timestamp(milliseconds: 1_767_225_650_000)
            try txn.put(plaintext(token, at), for: key, in: legacy.activityTokens)
            try txn.put([], for: StoreKey.parts(user, device, activity), in: legacy.deviceActivities)
            try txn.put([], for: ExpiryKey(at: at, kind: .activityToken, recordKey: key).bytes, in: legacy.expiry)
            try txn.put(owner(user, device, activity), for: SHA256.hash(Array(token.utf8)) + [TokenKind.activity.rawValue],
                        in: legacy.tokenOwners)
        }

        func tombstone(_ user: String, _ device: String, sequence: UInt64, deletedAt: Int64) throws {
            let key = StoreKey.parts(user, device)
            let at = Timestamp(milliseconds: deletedAt)
            try txn.put(TombstoneValue(sequence: sequence, deletedAt: at).encoded(), for: key, in: legacy.tombstones)
            try txn.put([], for: ExpiryKey(at: at, kind: .tombstone, recordKey: key).bytes, in: legacy.expiry)
        }

        func version(_ schema: UInt8) throws {
            try txn.put([1, schema], for: Array("schemaVersion".utf8), in: meta)
        }
    }
}
