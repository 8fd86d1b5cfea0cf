import Foundation
import RegistryCore
import Testing
@testable import RegistryHTTP

/// The internal reads the console uses (docs/api.md "Operator reads"): the
/// operator view of a user's devices, an activity's token counts, removals
/// over time, recent notifications and the delivery queue. None carries a
/// token; each refuses a bad parameter by name.
@Suite struct OperatorReadsHTTPTests {
    @Test func theOperatorViewCarriesFingerprintsAndNoToken() async throws {
        try await Harness.with { h in
            await h.register("d1", user: "alice", #""pushToken": "\#(token(1))", "environment": "sandbox""#)
            await h.register("d1", user: "alice", #""pushToken": "\#(token(1))""#)
            await h.send("POST", "/v1/devices/push-to-start-token", body: #"{"deviceId": "d1", "token": "\#(token(2))"}"#)
            await h.register("d2", user: "alice")
            let reply = await h.send("GET", "/internal/v1/users/alice/devices?view=operator", as: .apiKey)
            #expect(reply.status == 200, "\(reply.text)")
            #expect(!reply.text.contains(token(1)) && !reply.text.contains(token(2)), "\(reply.text)")
            let devices = reply.json["devices"]?.array ?? []
            let d1 = try #require(devices.first { $0["deviceId"]?.string == "d1" })
            #expect(d1["pushTokenFingerprint"]?.string == HistoryEvent.fingerprint(of: token(1)))
            #expect(d1["pushToStartTokenFingerprint"]?.string == HistoryEvent.fingerprint(of: token(2)))
            #expect(d1["pushToStartEnvironment"]?.string == "production")
            #expect(d1["userId"]?.string == "alice" && d1["hasPushToken"]?.bool == true)
            #expect(d1["pushToken"] == nil && d1["pushToStartToken"] == nil)
            let d2 = try #require(devices.first { $0["deviceId"]?.string == "d2" })
            #expect(d2["pushTokenFingerprint"]?.isNull == true && d2["tokenUpdatedAt"]?.isNull == true)
            // The fingerprints are the ones the user's history shows.
            let history = await h.send("GET", "/internal/v1/users/alice/history", as: .apiKey).json["events"]?.array ?? []
            #expect(history.contains { $0["tokenFingerprint"] == d1["pushTokenFingerprint"] })
            // Without `view`, or with `view=sender`, the sender's view as before.
            let sender = await h.send("GET", "/internal/v1/users/alice/devices", as: .apiKey)
            #expect(sender.body == (await h.send("GET", "/internal/v1/users/alice/devices?view=sender", as: .apiKey)).body)
            #expect(sender.text.contains(token(1)))
        }
    }

    @Test(arguments: ["view=tokens", "view=", "view=Operator", "view=operator&view=operator"])
    func aBadViewIsRefusedByName(_ query: String) async throws {
        try await Harness.with { h in
            let reply = await h.send("GET", "/internal/v1/users/alice/devices?\(query)", as: .apiKey)
            #expect(reply.status == 400 && reply.errorCode == "invalid_field", "\(query): \(reply.text)")
            #expect(reply.errorMessage.hasPrefix("view "), "\(reply.errorMessage)")
        }
    }

    @Test func tokenCountsAreByAppAndEnvironment() async throws {
        try await Harness.with { h in
            for (n, environment, app) in [(1, "production", "default"), (2, "sandbox", "default"), (3, "production", "default"),
                                          (4, "sandbox", "com.example.scores")] {
                await h.send("POST", "/v1/activities/m1/activity-token",
                             body: #"{"deviceId": "d\#(n)", "token": "\#(token(UInt8(n)))", "environment": "\#(environment)", "appId": "\#(app)"}"#,
                             as: .user("u\(n)"))
            }
            let reply = await h.send("GET", "/internal/v1/activities/m1/token-counts", as: .apiKey)
            #expect(reply.status == 200, "\(reply.text)")
            #expect(reply.text == #"{"activityId":"m1","tokens":4,"environments":{"production":2,"sandbox":2},"apps":["#
                + #"{"appId":"com.example.scores","tokens":1,"environments":{"production":0,"sandbox":1}},"#
                + #"{"appId":"default","tokens":3,"environments":{"production":2,"sandbox":1}}]}"#)
            let none = await h.send("GET", "/internal/v1/activities/nobody/token-counts", as: .apiKey)
            #expect(none.text == #"{"activityId":"nobody","tokens":0,"environments":{"production":0,"sandbox":0},"apps":[]}"#)
            let bad = await h.send("GET", "/internal/v1/activities/\(String(repeating: "m", count: 129))/token-counts", as: .apiKey)
            #expect(bad.status == 400 && bad.errorMessage.hasPrefix("activityId "), "\(bad.text)")
            #expect(await h.send("GET", "/internal/v1/activities/m1/token-counts", as: .user("u1")).status == 403)
        }
    }

    @Test func removalsListEveryBucketOfTheWindowOldestFirst() async throws {
        // The harness's clock reads 2026-12-02T11:04:05.123Z.
        try await Harness.with { h in
            await h.register("d1", user: "alice", #""pushToken": "\#(token(1))""#)
            await h.register("d2", user: "alice", #""pushToken": "\#(token(2))""#)
            await h.send("POST", "/internal/v1/feedback", body: #"{"token": "\#(token(1))", "reason": "Unregistered"}"#, as: .apiKey)
            await h.send("DELETE", "/v1/devices/d2")
            let hourly = await h.send("GET", "/internal/v1/removals", as: .apiKey)
            #expect(hourly.status == 200, "\(hourly.text)")
            #expect(hourly.json["bucket"]?.string == "hour")
            #expect(hourly.json["from"]?.string == "2026-12-01T12:00:00.000Z" && hourly.json["to"]?.string == "2026-12-02T12:00:00.000Z")
            let series = hourly.json["series"]?.array ?? []
            #expect(series.count == 24)
            #expect(series.first?["start"]?.string == "2026-12-01T12:00:00.000Z")
            #expect(series.last?["start"]?.string == "2026-12-02T11:00:00.000Z")
            #expect(series.dropLast().allSatisfy { $0["removed"]?.int == 0 })
            let now = try #require(series.last)
            #expect(now["removed"]?.int == 2 && now["reasons"]?["feedback"]?.int == 1 && now["reasons"]?["signOut"]?.int == 1)
            #expect(now["feedbackReasons"]?["Unregistered"]?.int == 1 && now["feedbackReasons"]?["BadDeviceToken"]?.int == 0)
            #expect(now["reasons"]?["expired"]?.int == 0, "every reason is listed")
            #expect(hourly.json["totals"]?["removed"]?.int == 2)
            #expect(!hourly.text.contains(token(1)))

            let daily = await h.send("GET", "/internal/v1/removals?bucket=day&buckets=2", as: .apiKey)
            #expect(daily.json["from"]?.string == "2026-12-01T00:00:00.000Z" && daily.json["to"]?.string == "2026-12-03T00:00:00.000Z")
            #expect(daily.json["series"]?.array.map { $0["removed"]?.int } == [0, 2])
            // An hour later the removals sit in the second-newest bucket.
            h.clock.advance(seconds: 3600)
            let later = await h.send("GET", "/internal/v1/removals?buckets=2", as: .apiKey).json["series"]?.array ?? []
            #expect(later.map { $0["removed"]?.int } == [2, 0])
        }
    }

    @Test(arguments: [("bucket=week", "bucket"), ("bucket=", "bucket"), ("bucket=hour&bucket=day", "bucket"),
                      ("buckets=0", "buckets"), ("buckets=169", "buckets"), ("buckets=-1", "buckets"), ("buckets=2.0", "buckets"),
                      ("bucket=day&buckets=91", "buckets"), ("buckets=24&buckets=24", "buckets")])
    func badRemovalsParametersAreRefusedByName(_ query: String, _ field: String) async throws {
        try await Harness.with { h in
            let reply = await h.send("GET", "/internal/v1/removals?\(query)", as: .apiKey)
            #expect(reply.status == 400 && reply.errorCode == "invalid_field", "\(query): \(reply.text)")
            #expect(reply.errorMessage.hasPrefix("\(field) "), "\(query): \(reply.errorMessage)")
        }
    }

    @Test func withoutAKeyTheDeliveryReadsAnswerDeliveryNotConfigured() async throws {
        try await Harness.with { h in
            for path in ["/internal/v1/notifications", "/internal/v1/deliveries/queue"] {
                let reply = await h.send("GET", path, as: .apiKey)
                #expect(reply.status == 409 && reply.errorCode == "delivery_not_configured", "\(path): \(reply.text)")
            }
        }
    }

    @Test func notificationsAreListedNewestFirstAPageAtATime() async throws {
        try await Harness.with { plain in
            let h = plain.delivering()
            await h.register("d1", user: "alice", #""pushToken": "\#(token(1))""#)
            var ids: [String] = []
            for _ in 0..<3 {
                ids.append(try #require(await h.notify(NotificationRoutesTests.alert).json["notification"]?["id"]?.string))
                h.clock.advance(seconds: 1)
            }
            let first = await h.send("GET", "/internal/v1/notifications?limit=2", as: .apiKey)
            #expect(first.status == 200, "\(first.text)")
            #expect(first.json["notifications"]?.array.compactMap { $0["id"]?.string } == [ids[2], ids[1]])
            #expect(first.json["notifications"]?[0]?["counts"]?["queued"]?.int == 1)
            let cursor = try #require(first.json["nextCursor"]?.string)
            let query = cursor.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let second = await h.send("GET", "/internal/v1/notifications?limit=2&cursor=\(query)", as: .apiKey)
            #expect(second.json["notifications"]?.array.compactMap { $0["id"]?.string } == [ids[0]])
            #expect(second.json["nextCursor"]?.isNull == true)
            let all = await h.send("GET", "/internal/v1/notifications", as: .apiKey)
            #expect(all.json["notifications"]?.array.count == 3 && all.json["nextCursor"]?.isNull == true)
        }
    }

    @Test(arguments: [("limit=0", "limit"), ("limit=101", "limit"), ("cursor=abc", "cursor"), ("cursor=", "cursor"),
                      ("cursor=12_not-a-uuid", "cursor"), ("cursor=x_00000000-0000-0000-0000-000000000000", "cursor")])
    func badListParametersAreRefusedByName(_ query: String, _ field: String) async throws {
        try await Harness.with { plain in
            let reply = await plain.delivering().send("GET", "/internal/v1/notifications?\(query)", as: .apiKey)
            #expect(reply.status == 400 && reply.errorCode == "invalid_field", "\(query): \(reply.text)")
            #expect(reply.errorMessage.hasPrefix("\(field) "), "\(query): \(reply.errorMessage)")
        }
    }

    @Test func theQueueShowsWhatWaitsAndForHowLong() async throws {
        try await Harness.with { plain in
            let h = plain.delivering()
            #expect(await h.send("GET", "/internal/v1/deliveries/queue", as: .apiKey).text
                    == #"{"queued":0,"sending":0,"oldestDueAt":null,"oldestWaitSeconds":0}"#)
            await h.register("d1", user: "alice", #""pushToken": "\#(token(1))""#)
            await h.register("d2", user: "alice", #""pushToken": "\#(token(2))""#)
            #expect(await h.notify(NotificationRoutesTests.alert).status == 202)
            h.clock.advance(seconds: 90)
            let reply = await h.send("GET", "/internal/v1/deliveries/queue", as: .apiKey)
            #expect(reply.text == #"{"queued":2,"sending":0,"oldestDueAt":"2026-12-02T11:04:05.123Z","oldestWaitSeconds":90}"#)
        }
    }
}
