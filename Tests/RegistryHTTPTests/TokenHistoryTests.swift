import JSON
import Testing
@testable import RegistryHTTP

/// docs/api.md "Token history": `GET /internal/v1/users/{userId}/history`.
@Suite struct TokenHistoryTests {
    /// SHA-256 of `token(n)`'s text, first 12 hex digits, computed outside the
    /// registry (`printf %s 0101…01 | sha256sum`).
    static let fingerprints: [UInt8: String] = [
        1: "58badd9b4551", 2: "749f1a97ff6c", 3: "83a538df0704", 4: "419a701fd185",
        5: "052a67d218c3", 7: "1967c0fdaed0", 9: "4cdf1b854377",
    ]

    static let eventMembers: Set<String> = ["at", "deviceId", "appId", "kind", "activityId", "action", "reason",
                                            "feedbackReason", "tokenFingerprint"]

    private func history(_ h: Harness, _ user: String = "alice", query: String = "") async -> Reply {
        await h.send("GET", "/internal/v1/users/\(user)/history" + (query.isEmpty ? "" : "?\(query)"), as: .apiKey)
    }

    private func events(_ h: Harness, _ user: String = "alice") async -> [JSONValue] {
        await history(h, user).json["events"]?.array ?? []
    }

    /// `kind action reason feedbackReason activityId fingerprint`, nulls as `-`, for compact comparisons.
    private func summary(_ event: JSONValue) -> String {
        ["kind", "action", "reason", "feedbackReason", "activityId", "tokenFingerprint"]
            .map { event[$0]?.string ?? "-" }.joined(separator: " ")
    }

    @Test func anEventHasExactlyTheContractShape() async throws {
        try await Harness.with { h in
            await h.register("d1", #""pushToken": "\#(token(1))""#)
            let reply = await history(h)
            #expect(reply.status == 200)
            #expect(reply.header("Content-Type") == "application/json")
            #expect(reply.text == #"{"events":[{"at":"2026-12-02T11:04:05.123Z","deviceId":"d1","appId":"default","kind":"push","activityId":null,"action":"registered","reason":null,"feedbackReason":null,"tokenFingerprint":"58badd9b4551"}]}"#)
            guard case .object(let event)? = reply.json["events"]?[0] else {
                Issue.record("no event in \(reply.text)"); return
            }
            #expect(Set(event.members.keys) == Self.eventMembers)
        }
    }

    @Test func anUnknownUserHasNoEvents() async throws {
        try await Harness.with { h in
            let reply = await history(h, "nobody")
            #expect(reply.status == 200)
            #expect(reply.text == #"{"events":[]}"#)
        }
    }

    @Test func registerRotateWithdrawAndSignOutAreEventsNewestFirst() async throws {
        try await Harness.with { h in
            await h.register("d1", #""pushToken": "\#(token(1))""#)
            h.clock.advance(seconds: 1)
            await h.register("d1", #""pushToken": "\#(token(2).uppercased())""#)
            h.clock.advance(seconds: 1)
            await h.register("d1", #""pushToken": "\#(token(2))", "appVersion": "2""#)  // no token change: no event
            await h.register("d1", #""pushToken": null"#)
            h.clock.advance(seconds: 1)
            await h.register("d1", #""pushToken": "\#(token(3))""#)
            await h.send("POST", "/v1/devices/push-to-start-token", body: #"{"deviceId": "d1", "token": "\#(token(4))"}"#)
            await h.send("POST", "/v1/activities/m%201/activity-token", body: #"{"deviceId": "d1", "token": "\#(token(5))"}"#)
            h.clock.advance(seconds: 1)
            #expect(await h.send("DELETE", "/v1/devices/d1").status == 204)

            let all = await events(h)
            let f = Self.fingerprints
            #expect(all.map(summary) == [
                "activity removed signOut - m 1 \(f[5]!)",
                "pushToStart removed signOut - - \(f[4]!)",
                "push removed signOut - - \(f[3]!)",
                "activity registered - - m 1 \(f[5]!)",
                "pushToStart registered - - - \(f[4]!)",
                "push registered - - - \(f[3]!)",
                "push removed permissionWithdrawn - - \(f[2]!)",
                "push rotated - - - \(f[2]!)",
                "push registered - - - \(f[1]!)",
            ])
            #expect(all.map { $0["at"]?.string ?? "" } == [
                "2026-12-02T11:04:09.123Z", "2026-12-02T11:04:09.123Z", "2026-12-02T11:04:09.123Z",
                "2026-12-02T11:04:08.123Z", "2026-12-02T11:04:08.123Z", "2026-12-02T11:04:08.123Z",
                "2026-12-02T11:04:07.123Z", "2026-12-02T11:04:06.123Z", "2026-12-02T11:04:05.123Z",
            ])
            #expect(all.allSatisfy { $0["deviceId"]?.string == "d1" && $0["appId"]?.string == "default" })
            let text = await history(h).text
            for n: UInt8 in [1, 2, 3, 4, 5] { #expect(!text.contains(token(n)), "token(\(n)) in the history") }
        }
    }

    @Test func theTokenDeleteRoutesAreDeleted() async throws {
        try await Harness.with { h in
            await h.send("POST", "/v1/devices/push-to-start-token", body: #"{"deviceId": "d1", "token": "\#(token(4))"}"#)
            await h.send("POST", "/v1/activities/m1/activity-token", body: #"{"deviceId": "d1", "token": "\#(token(5))"}"#)
            await h.send("DELETE", "/v1/devices/d1/push-to-start-token")
            await h.send("DELETE", "/v1/activities/m1/activity-token?deviceId=d1")
            let f = Self.fingerprints
            #expect(await events(h).prefix(2).map(summary) == [
                "activity removed deleted - m1 \(f[5]!)",
                "pushToStart removed deleted - - \(f[4]!)",
            ])
        }
    }

    @Test func feedbackIsRemovedWithItsReason() async throws {
        try await Harness.with { h in
            await h.register("d1", #""pushToken": "\#(token(1))""#)
            await h.send("POST", "/v1/activities/m1/activity-token", body: #"{"deviceId": "d1", "token": "\#(token(2))"}"#)
            await h.send("POST", "/internal/v1/feedback", body: #"{"token": "\#(token(1))", "reason": "Unregistered"}"#,
                         as: .apiKey)
            await h.send("POST", "/internal/v1/feedback",
                         body: #"{"token": "\#(token(2).uppercased())", "reason": "DeviceTokenNotForTopic"}"#, as: .apiKey)
            let f = Self.fingerprints
            #expect(await events(h).prefix(2).map(summary) == [
                "activity removed feedback DeviceTokenNotForTopic m1 \(f[2]!)",
                "push removed feedback Unregistered - \(f[1]!)",
            ])
        }
    }

    @Test func theOneOwnerRuleSaysMovedAndNeverNamesTheOtherUser() async throws {
        try await Harness.with { h in
            await h.register("old", #""pushToken": "\#(token(7))""#)
            await h.register("new", #""pushToken": "\#(token(7))""#)
            let f = Self.fingerprints
            let moved = await events(h)
            #expect(moved.first.map(summary) == "push registered - - - \(f[7]!)")
            #expect(moved.first?["deviceId"]?.string == "new")
            #expect(moved.dropFirst().first.map(summary) == "push removed movedToDevice - - \(f[7]!)")
            #expect(moved.dropFirst().first?["deviceId"]?.string == "old")

            await h.register("bobs-phone", user: "bob-the-other-user", #""pushToken": "\#(token(7))""#)
            let reply = await history(h)
            let latest = reply.json["events"]?[0]
            #expect(latest.map(summary) == "push removed movedToUser - - \(f[7]!)")
            #expect(latest?["deviceId"]?.string == "new")
            #expect(!reply.text.contains("bob"), "\(reply.text)")
            let bobs = await events(h, "bob-the-other-user")
            #expect(bobs.map(summary) == ["push registered - - - \(f[7]!)"])
            #expect(bobs.first?["deviceId"]?.string == "bobs-phone")
        }
    }

    @Test func theDeviceCapIsAReason() async throws {
        try await Harness.with(maxDevicesPerUser: 1) { h in
            await h.register("first", #""pushToken": "\#(token(1))""#)
            h.clock.advance(seconds: 1)
            await h.register("second")
            let evicted = await events(h).first
            #expect(evicted.map(summary) == "push removed deviceCap - - \(Self.fingerprints[1]!)")
            #expect(evicted?["deviceId"]?.string == "first")
        }
    }

    @Test func eventsNameTheirApp() async throws {
        try await Harness.with { h in
            await h.register("d1", #""appId": "com.acme.one", "pushToken": "\#(token(1))""#)
            await h.register("d1", #""appId": "com.acme.two", "pushToken": "\#(token(2))""#)
            #expect(await events(h).map { $0["appId"]?.string } == ["com.acme.two", "com.acme.one"])
        }
    }

    @Test func anFCMTokensFingerprintIsOfItsText() async throws {
        try await Harness.with { h in
            await h.register("a1", #""platform": "fcm", "pushToken": "fcm:Token_1.x-y""#)
            #expect(await events(h).first?["tokenFingerprint"]?.string == "48ad40a28031")
        }
    }

    @Test func limitKeepsTheNewest() async throws {
        try await Harness.with { h in
            for n: UInt8 in 1...5 {
                await h.register("d\(n)", #""pushToken": "\#(token(n))""#)
                h.clock.advance(seconds: 1)
            }
            let two = await history(h, query: "limit=2")
            #expect(two.status == 200)
            #expect(two.json["events"]?.array.compactMap { $0["deviceId"]?.string } == ["d5", "d4"])
            #expect(await history(h, query: "limit=1").json["events"]?.array.count == 1)
            #expect(await history(h, query: "limit=100").json["events"]?.array.count == 5)
            #expect(await history(h, query: "limit=3&other=1").json["events"]?.array.count == 3)
        }
    }

    @Test func aUserKeepsAtMostAHundredEvents() async throws {
        try await Harness.with { h in
            for n in 0..<52 {
                await h.register("d1", #""pushToken": "\#(token(UInt8(n % 2 + 1)))""#)
                await h.register("d1", #""pushToken": null"#)
            }
            #expect(await events(h).count == 100)
        }
    }

    @Test(arguments: ["limit=0", "limit=101", "limit=abc", "limit=-1", "limit=", "limit=1&limit=2", "limit=%zz"])
    func aBadLimitIsAFieldError(_ query: String) async throws {
        try await Harness.with { h in
            let reply = await history(h, query: query)
            #expect(reply.status == 400)
            #expect(reply.errorCode == "invalid_field")
            #expect(reply.errorMessage.hasPrefix("limit"), "\(reply.errorMessage)")
        }
    }

    @Test func theUserIdIsDecodedThenChecked() async throws {
        try await Harness.with { h in
            await h.register("d1", user: "u/1", #""pushToken": "\#(token(1))""#)
            #expect(await history(h, "u%2F1").json["events"]?.array.count == 1)
            let control = await history(h, "a%00b")
            #expect(control.status == 400)
            #expect(control.errorMessage.hasPrefix("userId"))
            let badEscape = await history(h, "a%zz")
            #expect(badEscape.errorMessage.hasPrefix("userId"))
        }
    }

    @Test func theHistoryNeedsTheInternalKey() async throws {
        try await Harness.with { h in
            await h.register("d1", #""pushToken": "\#(token(1))""#)
            #expect(await h.send("GET", "/internal/v1/users/alice/history", as: .none).status == 401)
            #expect(await h.send("GET", "/internal/v1/users/alice/history", as: .bearer("not-the-key")).status == 401)
            let device = await h.send("GET", "/internal/v1/users/alice/history", as: .user("alice"))
            #expect(device.status == 403)
            #expect(device.errorCode == "forbidden")
            let wrongMethod = await h.send("POST", "/internal/v1/users/alice/history", body: "{}", as: .apiKey)
            #expect(wrongMethod.status == 405)
            #expect(wrongMethod.header("Allow") == "GET, HEAD")
        }
    }

    @Test func requestsAreCountedUnderTheRouteTemplate() async throws {
        try await Harness.with { h in
            await history(h, "u%2F1")
            await history(h, query: "limit=0")
            let metrics = await h.send("GET", "/metrics", as: .apiKey).text
            #expect(metrics.contains(#"registry_http_requests_total{route="GET /internal/v1/users/{userId}/history",status="200"} 1"#))
            #expect(metrics.contains(#"registry_http_requests_total{route="GET /internal/v1/users/{userId}/history",status="400"} 1"#))
        }
    }

    @Test func theActivityCapIsAReason() async throws {
        try await Harness.with { h in
            for n in 0..<33 {
                let reply = await h.send("POST", "/v1/activities/m\(n)/activity-token",
                                         body: #"{"deviceId": "d1", "token": "\#(token(UInt8(n + 1)))"}"#)
                #expect(reply.status == 200)
                h.clock.advance(seconds: 1)
            }
            let latest = await events(h).prefix(2).map(summary)
            #expect(latest.contains("activity removed activityCap - m0 \(Self.fingerprints[1]!)"), "\(latest)")
        }
    }

    @Test func expiryIsAReasonAndOldEventsAreSwept() async throws {
        try await Harness.with(deviceTTL: .seconds(100), activityTTL: .seconds(100)) { h in
            await h.register("d1", #""pushToken": "\#(token(1))""#)
            h.clock.advance(seconds: 101)
            #expect(await h.send("POST", "/internal/v1/sweep", as: .apiKey).json["devices"]?.int == 1)
            let after = await events(h)
            #expect(after.map(summary) == ["push removed expired - - \(Self.fingerprints[1]!)"],
                    "the removal is new; the registration was older than the device TTL")
            #expect(after.first?["at"]?.string == "2026-12-02T11:05:46.123Z")
        }
    }
}
