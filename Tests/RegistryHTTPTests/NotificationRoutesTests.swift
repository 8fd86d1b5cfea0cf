import Foundation
import Testing
@testable import RegistryHTTP

/// The notification routes' answers (docs/api.md "Delivery") with no
/// sender running, so every accepted delivery stays `queued`.
@Suite struct NotificationRoutesTests {
    static let alert = #"{"target": {"userId": "alice"}, "payload": {"aps": {"alert": "Goal!"}}}"#

    @Test func withoutAKeyEveryRouteAnswersDeliveryNotConfigured() async throws {
        try await Harness.with { h in
            await h.register("d1", user: "alice", #""pushToken": "\#(token(1))""#)
            let id = UUID().uuidString.lowercased()
            for reply in [await h.notify(Self.alert),
                          await h.send("GET", "/internal/v1/notifications/\(id)", as: .apiKey),
                          await h.send("DELETE", "/internal/v1/notifications/\(id)", as: .apiKey)] {
                #expect(reply.status == 409, "\(reply.text)")
                #expect(reply.errorCode == "delivery_not_configured")
                #expect(reply.errorMessage.contains("--apns-key-file"), "\(reply.errorMessage)")
            }
            #expect(await queued(h) == 0)
        }
    }

    /// A full queue refuses a notification whole (503 with Retry-After)
    /// and stores nothing of it, its idempotency key included; below the
    /// limit a notification is accepted whatever its own size.
    @Test func aFullQueueRefusesANotificationAndStoresNothing() async throws {
        try await Harness.with { plain in
            let h = plain.delivering(maxQueued: 2)
            for n in 1...3 { await h.register("d\(n)", user: "u\(n)", #""pushToken": "\#(token(UInt8(n)))""#) }
            let twoAtOnce = await h.notify(#"{"target": {"userIds": ["u1", "u2", "u3"]}, "payload": {"aps": {}}}"#)
            #expect(twoAtOnce.status == 202, "below the limit, accepted whatever its size: \(twoAtOnce.text)")
            let keyed = #"{"target": {"userId": "u1"}, "payload": {"aps": {}}, "idempotencyKey": "k1"}"#
            let refused = await h.notify(keyed)
            #expect(refused.status == 503 && refused.errorCode == "queue_full", "\(refused.text)")
            #expect(refused.header("Retry-After") == "5")
            #expect(refused.errorMessage.contains("--max-queued-deliveries"), "\(refused.errorMessage)")
            #expect(await queued(h) == 3)
            let id = try #require(twoAtOnce.json["notification"]?["id"]?.string)
            #expect(await h.send("DELETE", "/internal/v1/notifications/\(id)", as: .apiKey).status == 200)
            let again = await h.notify(keyed)
            #expect(again.status == 202, "the refused key was not stored: \(again.text)")
        }
    }

    @Test func acceptAnswersTheNotificationWithItsCounts() async throws {
        try await Harness.with { plain in
            let h = plain.delivering()
            await h.register("d1", user: "alice", #""pushToken": "\#(token(1))""#)
            await h.register("d2", user: "alice", #""pushToken": "\#(token(2))""#)
            await h.register("d3", user: "alice", #""pushToken": "fcm:token-3", "platform": "fcm""#)
            let reply = await h.notify(Self.alert)
            #expect(reply.status == 202, "\(reply.text)")
            let notification = try #require(reply.json["notification"])
            let id = try #require(notification["id"]?.string)
            #expect(UUID(uuidString: id) != nil && id == id.lowercased(), "\(id)")
            #expect(notification["createdAt"]?.string == "2026-12-02T11:04:05.123Z")
            #expect(notification["appId"]?.string == "default")
            #expect(notification["pushType"]?.string == "alert")
            let counts = notification["counts"]
            let expected: [String: Int64] = ["queued": 2, "sending": 0, "delivered": 0, "failed": 1, "unknown": 0,
                                             "expired": 0, "cancelled": 0]
            for (state, count) in expected { #expect(counts?[state]?.int == count, "\(state): \(reply.text)") }

            let activity = await h.notify(#"{"target": {"activityId": "m1"}, "payload": {"aps": {"event": "update"}}}"#)
            #expect(activity.status == 202)
            #expect(activity.json["notification"]?["pushType"]?.string == "liveactivity")
            #expect(activity.json["notification"]?["counts"]?["queued"]?.int == 0, "an activity nobody holds has no delivery")
        }
    }

    @Test func withoutAnExpirationANotificationExpiresAnHourAfterItWasAccepted() async throws {
        try await Harness.with { plain in
            let h = plain.delivering()
            await h.register("d1", user: "alice", #""pushToken": "\#(token(1))""#)
            let reply = await h.notify(Self.alert)
            let id = try #require(reply.json["notification"]?["id"]?.string, "\(reply.text)")
            let stored = try #require(try await h.store.notification(id: id))
            #expect(stored.expiration == stored.createdAt.adding(seconds: 3600),
                    "created \(stored.createdAt), expires \(stored.expiration)")
        }
    }

    @Test func showPagesThroughTheDeliveries() async throws {
        try await Harness.with { plain in
            let h = plain.delivering()
            for n in UInt8(1)...5 { await h.registerActivityToken(n) }
            let id = try #require(await h.notify(#"{"target": {"activityId": "m1"}, "payload": {"aps": {}}}"#)
                .json["notification"]?["id"]?.string)
            var users: [String] = []
            var cursor: String?
            var pages = 0
            repeat {
                let query = "limit=2" + (cursor.map { "&cursor=\($0)" } ?? "")
                let page = await h.send("GET", "/internal/v1/notifications/\(id)?\(query)", as: .apiKey)
                #expect(page.status == 200, "\(page.text)")
                #expect(page.json["notification"]?["id"]?.string == id)
                let deliveries = page.json["deliveries"]?.array ?? []
                #expect(deliveries.count <= 2)
                for delivery in deliveries {
                    users.append(delivery["userId"]?.string ?? "")
                    #expect(delivery["kind"]?.string == "activity")
                    #expect(delivery["activityId"]?.string == "m1")
                    #expect(delivery["state"]?.string == "queued")
                    #expect(delivery["attempts"]?.int == 0)
                    #expect(delivery["tokenFingerprint"]?.string?.count == 12)
                    #expect(UUID(uuidString: delivery["apnsId"]?.string ?? "") != nil)
                }
                cursor = page.json["nextCursor"]?.string
                if cursor == nil { #expect(page.json["nextCursor"]?.isNull == true) }
                pages += 1
            } while cursor != nil && pages < 10
            #expect(pages == 3)
            #expect(users.sorted() == (1...5).map { "u\($0)" })

            let whole = await h.send("GET", "/internal/v1/notifications/\(id)", as: .apiKey)
            #expect(whole.json["deliveries"]?.array.count == 5)
            #expect(whole.json["nextCursor"]?.isNull == true)
            for query in ["cursor=abc", "cursor=-1", "cursor=99999999999"] {
                let bad = await h.send("GET", "/internal/v1/notifications/\(id)?\(query)", as: .apiKey)
                #expect(bad.status == 400, "\(query): \(bad.text)")
                #expect(bad.errorCode == "invalid_field")
                #expect(bad.errorMessage.hasPrefix("cursor"), "\(bad.errorMessage)")
            }
            for query in ["limit=0", "limit=1001"] {
                let bad = await h.send("GET", "/internal/v1/notifications/\(id)?\(query)", as: .apiKey)
                #expect(bad.status == 400 && bad.errorMessage.hasPrefix("limit"), "\(query): \(bad.text)")
            }
        }
    }

    @Test func unknownAndMalformedIdsAreNotFound() async throws {
        try await Harness.with { plain in
            let h = plain.delivering()
            for id in [UUID().uuidString.lowercased(), "not-a-uuid", "1"] {
                for method in ["GET", "DELETE"] {
                    let reply = await h.send(method, "/internal/v1/notifications/\(id)", as: .apiKey)
                    #expect(reply.status == 404, "\(method) \(id): \(reply.text)")
                    #expect(reply.errorCode == "not_found")
                }
            }
        }
    }

    @Test func cancelTurnsQueuedDeliveriesCancelled() async throws {
        try await Harness.with { plain in
            let h = plain.delivering()
            await h.register("d1", user: "alice", #""pushToken": "\#(token(1))""#)
            await h.register("d2", user: "alice", #""pushToken": "\#(token(2))""#)
            let id = try #require(await h.notify(Self.alert).json["notification"]?["id"]?.string)
            let cancelled = await h.send("DELETE", "/internal/v1/notifications/\(id)", as: .apiKey)
            #expect(cancelled.status == 200, "\(cancelled.text)")
            #expect(cancelled.json["notification"]?["counts"]?["cancelled"]?.int == 2)
            #expect(cancelled.json["notification"]?["counts"]?["queued"]?.int == 0)
            #expect(await queued(h) == 0)
            let shown = await h.send("GET", "/internal/v1/notifications/\(id)", as: .apiKey)
            #expect(shown.json["deliveries"]?.array.allSatisfy { $0["state"]?.string == "cancelled" } == true, "\(shown.text)")
            let again = await h.send("DELETE", "/internal/v1/notifications/\(id)", as: .apiKey)
            #expect(again.status == 200 && again.json["notification"]?["counts"]?["cancelled"]?.int == 2)
        }
    }

    @Test func anIdempotencyKeyAnswersItsFirstNotification() async throws {
        try await Harness.with { plain in
            let h = plain.delivering()
            await h.register("d1", user: "alice", #""pushToken": "\#(token(1))""#)
            let body = #"{"target": {"userId": "alice"}, "payload": {"aps": {"alert": "Goal!"}}, "idempotencyKey": "goal-42"}"#
            let first = await h.notify(body)
            #expect(first.status == 202)
            let id = try #require(first.json["notification"]?["id"]?.string)
            // The same body, spelled with other whitespace and member order, is the same request.
            let respelled = #"{"idempotencyKey": "goal-42", "payload": {"aps": {"alert": "Goal!"}}, "target": {"userId": "alice"}}"#
            for same in [body, respelled] {
                let replay = await h.notify(same)
                #expect(replay.status == 200, "\(replay.text)")
                #expect(replay.json["notification"]?["id"]?.string == id)
            }
            #expect(await queued(h) == 1, "a replay sends nothing")

            let other = await h.notify(#"{"target": {"userId": "alice"}, "payload": {"aps": {"alert": "Own goal"}}, "idempotencyKey": "goal-42"}"#)
            #expect(other.status == 409, "\(other.text)")
            #expect(other.errorCode == "idempotency_key_reused")
            let otherPriority = await h.notify(#"{"target": {"userId": "alice"}, "payload": {"aps": {"alert": "Goal!"}}, "priority": 5, "idempotencyKey": "goal-42"}"#)
            #expect(otherPriority.status == 409)
            #expect(await queued(h) == 1)
        }
    }

    /// The notification views carry fingerprints only: no byte of any response is a token.
    @Test func noResponseCarriesAToken() async throws {
        try await Harness.with { plain in
            let h = plain.delivering()
            await h.register("d1", user: "alice", #""pushToken": "\#(token(0xa1))""#)
            await h.send("POST", "/v1/devices/push-to-start-token", body: #"{"deviceId": "d1", "token": "\#(token(0xa2))"}"#,
                         as: .user("alice"))
            await h.send("POST", "/v1/activities/m1/activity-token", body: #"{"deviceId": "d1", "token": "\#(token(0xa3))"}"#,
                         as: .user("alice"))
            var replies: [Reply] = []
            for body in [Self.alert, #"{"target": {"userId": "alice", "pushToStart": true}, "payload": {"aps": {}}}"#,
                         #"{"target": {"activityId": "m1"}, "payload": {"aps": {}}}"#] {
                let accepted = await h.notify(body)
                #expect(accepted.status == 202)
                let id = accepted.json["notification"]?["id"]?.string ?? ""
                let shown = await h.send("GET", "/internal/v1/notifications/\(id)", as: .apiKey)
                #expect(shown.json["deliveries"]?.array.count == 1, "\(shown.text)")
                replies += [accepted, shown, await h.send("DELETE", "/internal/v1/notifications/\(id)", as: .apiKey)]
            }
            for reply in replies {
                for n: UInt8 in [0xa1, 0xa2, 0xa3] {
                    #expect(!reply.text.lowercased().contains(token(n)), "\(reply.text)")
                    #expect(!reply.text.lowercased().contains(String(token(n).prefix(16))), "\(reply.text)")
                }
            }
        }
    }
}
