import Foundation
import LMDB
import Postgres
@testable import RegistryCore
@testable import RegistryLMDB
@testable import RegistryPostgres
@testable import TokenSealing
import Testing

/// Sealed values are bound to their record (`TokenSlot`); registries
/// written before that (each value bound to its kind only, `TokenSealer`
/// format 1) are sealed again at open, on either backend, and no value of
/// the old binding is left.
struct SealedValueBindingTests {
    /// `token` sealed as before the binding: format 1, its kind as the context.
    private static func unbound(_ token: String, _ kind: TokenKind) -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: TokenSealer.nonceLength)
        for i in nonce.indices { nonce[i] = UInt8.random(in: 0...255) }
        return nonce.withUnsafeBytes {
            TestKeys.vault.sealer.seal(Array(token.utf8), context: [kind.rawValue], nonce: $0, format: 1)
        }
    }

    private func fill(_ f: StoreFixture) async throws {
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.registerPushToStart("alice", "d1", token: 2)
        try await f.store.registerActivity("m", "alice", "d1", token: 3)
        try await f.store.register("bob", app: "com.acme.one", "d2", token: 4)
    }

    private func expectEveryTokenOpens(_ f: StoreFixture) async throws {
        let alice = try #require(try await f.store.device(userId: "alice", deviceId: "d1"))
        #expect(alice.pushToken?.token == apnsToken(1) && alice.pushToStartToken?.token == apnsToken(2))
        #expect(try await f.store.allActivityTokens("m").map(\.token) == [apnsToken(3)])
        #expect(try await f.store.devices(userIds: ["bob"]).first?.devices.first?.pushToken?.token == apnsToken(4))
        #expect(try await f.check() == [])
        // The owner index still finds them: feedback removes by token.
        #expect(try await f.store.removeToken(apnsToken(4), reason: .unregistered, registeredBefore: nil) == 1)
    }

    @Test(.lmdbOnly) func anLMDBRegistryOfUnboundValuesIsBoundAtOpen() async throws {
        let f = try makeStore(); defer { f.close() }
        try await fill(f)
        let schema = f.lmdb.schema
        try f.lmdb.environment.write { txn in
            for kind in TokenKind.allCases {
                var rewritten: [([UInt8], [UInt8])] = []
                try txn.scan(schema.database(kind)) { key, value in
                    let token = try TokenValue(decoding: value, in: TokenSlot(kind, key: key), TestKeys.vault)
                    var w = ByteWriter(version: 2)
                    w.byte(UInt8(APNsEnvironment.allCases.firstIndex(of: token.environment)!))
                    w.timestamp(token.updatedAt)
                    w.blob(Self.unbound(token.token, kind))
                    rewritten.append((key, w.bytes))
                    return true
                }
                for (key, value) in rewritten { try txn.put(value, for: key, in: schema.database(kind)) }
            }
            var w = ByteWriter(version: 1)
            w.varint(3)
            try txn.put(w.bytes, for: Schema.MetaKey.schemaVersion, in: schema.meta)
        }
        try f.reopen()
        let formats = try f.lmdb.environment.read { txn in
            var formats: [UInt8: Int] = [:]
            for kind in TokenKind.allCases {
                try txn.scan(f.lmdb.schema.database(kind)) { _, value in
                    formats[try TokenValue.sealed(in: value).first ?? 0, default: 0] += 1
                    return true
                }
            }
            return formats
        }
        #expect(formats == [2: 4], "every value sealed again, bound")
        let version = try f.lmdb.environment.read { txn in try txn.get(Schema.MetaKey.schemaVersion, in: f.lmdb.schema.meta) }
        #expect(version == [1, 4])
        try await expectEveryTokenOpens(f)
    }

    @Test(.postgresOnly) func aPostgresRegistryOfUnboundValuesIsBoundAtOpen() async throws {
        let f = try makeStore(); defer { f.close() }
        try await fill(f)
        let connection = try f.databaseConnection(); defer { connection.close() }
        let rows = try connection.query("SELECT user_id, app_id, device_id, kind, activity_id FROM registry_tokens")
        let reads = try await f.store.devices(userIds: ["alice", "bob"])
        let activity = try await f.store.allActivityTokens("m")
        for row in 0..<rows.rowCount {
            let user = try rows.string(row, 0) ?? "", kind = TokenKind(rawValue: UInt8(try rows.int64(row, 3) ?? 0))!
            let device = reads.first { $0.userId == user }!.devices.first!
            let token = switch kind {
            case .push: device.pushToken!.token
            case .pushToStart: device.pushToStartToken!.token
            case .activity: activity.first!.token
            }
            try connection.query("""
                UPDATE registry_tokens SET sealed = $6
                WHERE user_id = $1 AND app_id = $2 AND device_id = $3 AND kind = $4 AND activity_id = $5
                """, [.text(user), .text(try rows.string(row, 1) ?? ""), .text(try rows.string(row, 2) ?? ""),
                      .int64(Int64(kind.rawValue)), .text(try rows.string(row, 4) ?? ""), .bytea(Self.unbound(token, kind))])
        }
        try connection.query("DELETE FROM registry_meta WHERE name = 'sealedValuesBound'")
        try f.reopen()
        let formats = try connection.query("SELECT get_byte(sealed, 0), count(*) FROM registry_tokens GROUP BY 1")
        let onlyFormat = try formats.int64(0, 0), count = try formats.int64(0, 1)
        #expect(formats.rowCount == 1 && onlyFormat == 2 && count == 4)
        try await expectEveryTokenOpens(f)
    }
}
