import Foundation
@testable import RegistryCore
@testable import RegistryLMDB
@testable import RegistryPostgres
import RegistryTestSupport
import Testing

/// One damaged sealed value (bit rot, a bad restore) must not cost every
/// other holder of the activity their push: the fan-out skips it, counts it
/// in the page (`unreadable`, which the HTTP layer logs and counts), and
/// pages on; `check` names it.
struct FanOutDamageTests {
    @Test func aTokenThatDoesNotOpenIsSkippedAndCountedNotAFailedPage() async throws {
        let f = try makeStore(); defer { f.close() }
        for n in 0..<5 {
            _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
                activityId: "m", userId: "u\(n)", deviceId: "d", token: apnsToken(n)))
        }
        switch TestBackend.current {
        case .lmdb:
            try f.corrupt { txn, schema in
                let key = StoreKey.activityToken("m", "u2", "d")
                var value = try #require(try txn.get(key, in: schema.activityTokens))
                value[value.count - 1] ^= 0x01
                try txn.put(value, for: key, in: schema.activityTokens)
            }
        case .postgres:
            let connection = try f.databaseConnection(); defer { connection.close() }
            try connection.query("""
                UPDATE registry_tokens SET sealed = set_byte(sealed, length(sealed) - 1, get_byte(sealed, length(sealed) - 1) # 1)
                WHERE user_id = 'u2' AND kind = 3
                """)
        }
        let first = try await f.store.activityTokens(activityId: "m", limit: 2, cursor: nil)
        let second = try await f.store.activityTokens(activityId: "m", limit: 2, cursor: try #require(first.nextCursor))
        let third = try await f.store.activityTokens(activityId: "m", limit: 2, cursor: try #require(second.nextCursor))
        #expect((first.tokens + second.tokens + third.tokens).map(\.userId) == ["u0", "u1", "u3", "u4"])
        #expect([first, second, third].map(\.unreadable) == [0, 1, 0])
        #expect(third.nextCursor == nil)
        #expect(try await f.check().contains { $0.contains("\"u2\"") })
    }
}
