import LMDB
@testable import RegistryCore
@testable import RegistryLMDB
import Testing
@testable import RegistryHTTP

/// A fan-out that meets a damaged sealed value answers the other holders,
/// and says so in the log and in `/metrics` (never with the token).
@Suite struct UnreadableTokenHTTPTests {
    @Test func aDamagedActivityTokenIsLeftOutLoggedAndCounted() async throws {
        try await Harness.with { h in
            for (user, n) in [("a", UInt8(1)), ("b", 2), ("c", 3)] {
                let reply = await h.send("POST", "/v1/activities/m1/activity-token",
                                         body: #"{"deviceId": "d", "token": "\#(token(n))"}"#, as: .user(user))
                #expect(reply.status == 200)
            }
            let schema = h.store.schema
            try h.store.environment.write { txn in
                let key = StoreKey.activityToken("m1", RecordID(user: "b", app: "0", device: "d"))
                var value = try #require(try txn.get(key, in: schema.activityTokens))
                value[value.count - 1] ^= 0x01
                try txn.put(value, for: key, in: schema.activityTokens)
            }
            let fanOut = await h.send("GET", "/internal/v1/activities/m1/tokens", as: .apiKey)
            #expect(fanOut.status == 200)
            #expect(fanOut.json["tokens"]?.array.compactMap { $0["userId"]?.string } == ["a", "c"])
            #expect(h.logs.all.contains(#""event":"unreadable_tokens_skipped""#) && h.logs.all.contains(#""count":1"#))
            #expect(!h.logs.all.contains(token(2)))
            let metrics = await h.send("GET", "/metrics", as: .apiKey)
            #expect(metrics.text.contains("registry_unreadable_tokens_total 1\n"), "\(metrics.text.prefix(200))")
        }
    }
}
