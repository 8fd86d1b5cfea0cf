import Foundation
import Postgres
@testable import RegistryCore
@testable import RegistryPostgres
import RegistryTestSupport
import Testing
import TokenSealing

/// A PostgreSQL registry of values sealed bound to their kind only is sealed again at open.
@Suite(.requiresPostgres) struct SealedValueBindingTests {
    @Test func aPostgresRegistryOfUnboundValuesIsBoundAtOpen() async throws {
        let f = try makeStore(); defer { f.close() }
        try await fillForBinding(f)
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
                      .int64(Int64(kind.rawValue)), .text(try rows.string(row, 4) ?? ""), .bytea(unboundSeal(token, kind))])
        }
        try connection.query("DELETE FROM registry_meta WHERE name = 'sealedValuesBound'")
        try f.reopen()
        let formats = try connection.query("SELECT get_byte(sealed, 0), count(*) FROM registry_tokens GROUP BY 1")
        let onlyFormat = try formats.int64(0, 0), count = try formats.int64(0, 1)
        #expect(formats.rowCount == 1 && onlyFormat == 2 && count == 4)
        try await expectEveryTokenOpensAfterBinding(f)
    }
}
