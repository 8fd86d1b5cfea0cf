import JSON
import RegistryCore
import Testing
@testable import RegistryHTTP

/// docs/api.md "App families": records keyed by (user, app, device), the
/// `appId` body field and query parameter, and views that name the app.
@Suite struct AppFamiliesTests {
    /// A v1 client names no app: every view it and the sender see says `default`.
    @Test func everyViewOfAV1RecordSaysDefault() async throws {
        try await Harness.with { h in
            let created = await h.register("d1", #""pushToken": "\#(token(1))""#)
            #expect(created.status == 201)
            #expect(created.json["device"]?["appId"]?.string == "default")
            #expect(created.text.contains(#""deviceId":"d1","appId":"default","platform":"apns""#))
            #expect(await h.send("GET", "/v1/devices/d1").json["device"]?["appId"]?.string == "default")
            #expect(await h.send("GET", "/v1/devices").json["devices"]?[0]?["appId"]?.string == "default")
            let pushToStart = await h.send("POST", "/v1/devices/push-to-start-token",
                                           body: #"{"deviceId": "d1", "token": "\#(token(2))"}"#)
            #expect(pushToStart.json["device"]?["appId"]?.string == "default")
            let activity = await h.send("POST", "/v1/activities/m1/activity-token",
                                        body: #"{"deviceId": "d1", "token": "\#(token(3))"}"#)
            #expect(activity.json["appId"]?.string == "default")
            #expect(await h.senderDevices("alice").first?["appId"]?.string == "default")
            let lookup = await h.send("POST", "/internal/v1/users/lookup", body: #"{"userIds": ["alice"]}"#, as: .apiKey)
            #expect(lookup.json["users"]?["alice"]?[0]?["appId"]?.string == "default")
            let fanOut = await h.send("GET", "/internal/v1/activities/m1/tokens", as: .apiKey)
            #expect(fanOut.json["tokens"]?[0]?["appId"]?.string == "default")
            #expect(fanOut.text.contains(#""deviceId":"d1","appId":"default","token":"#))
        }
    }

    @Test func twoAppsOnOneDeviceKeepTwoRecords() async throws {
        try await Harness.with { h in
            let one = await h.register("d1", #""appId": "com.acme.one", "pushToken": "\#(token(1))""#)
            #expect(one.status == 201)
            #expect(one.json["device"]?["appId"]?.string == "com.acme.one")
            let two = await h.register("d1", #""appId": "com.acme.two", "pushToken": "\#(token(2))""#)
            #expect(two.status == 201, "the second app's record is new, not an update of the first")
            #expect(two.json["device"]?["appId"]?.string == "com.acme.two")
            let again = await h.register("d1", #""appId": "com.acme.one""#)
            #expect(again.status == 200)
            #expect(again.json["device"]?["hasPushToken"]?.bool == true)

            let listed = await h.send("GET", "/v1/devices").json["devices"]?.array ?? []
            #expect(listed.count == 2)
            #expect(Set(listed.compactMap { $0["appId"]?.string }) == ["com.acme.one", "com.acme.two"])
            let sender = await h.senderDevices("alice")
            let tokens = Dictionary(uniqueKeysWithValues: sender.compactMap { d in
                d["appId"]?.string.map { ($0, d["pushToken"]?.string ?? "") }
            })
            #expect(tokens == ["com.acme.one": token(1), "com.acme.two": token(2)])
        }
    }

    @Test func theTokenRoutesTakeAnAppId() async throws {
        try await Harness.with { h in
            let start = await h.send("POST", "/v1/devices/push-to-start-token",
                                     body: #"{"deviceId": "d1", "token": "\#(token(1))", "appId": "com.acme.one"}"#)
            #expect(start.status == 200)
            #expect(start.json["device"]?["appId"]?.string == "com.acme.one")
            let activity = await h.send("POST", "/v1/activities/m1/activity-token",
                                        body: #"{"deviceId": "d1", "token": "\#(token(2))", "appId": "com.acme.two"}"#)
            #expect(activity.status == 200)
            #expect(activity.json["appId"]?.string == "com.acme.two")
            let sender = await h.senderDevices("alice")
            #expect(sender.count == 2, "each app's token created its own record")
            let one = sender.first { $0["appId"]?.string == "com.acme.one" }
            #expect(one?["pushToStartToken"]?.string == token(1))
            #expect(one?["activityCount"]?.int == 0)
            let two = sender.first { $0["appId"]?.string == "com.acme.two" }
            #expect(two?["activityCount"]?.int == 1)
            #expect(two?["pushToStartToken"]?.isNull == true)
        }
    }

    @Test func namingTheDefaultAppIsTheSameAsNamingNone() async throws {
        try await Harness.with { h in
            #expect(await h.register("d1", #""appId": "default""#).status == 201)
            #expect(await h.register("d1").status == 200)
            #expect(await h.register("d1", #""appId": null"#).status == 200)
            #expect(await h.send("GET", "/v1/devices").json["devices"]?.array.count == 1)
        }
    }

    @Test func theDeviceCapCountsPerApp() async throws {
        try await Harness.with(maxDevicesPerUser: 2) { h in
            await h.register("a", #""appId": "com.acme.one""#)
            h.clock.advance(seconds: 1)
            await h.register("b", #""appId": "com.acme.one""#)
            h.clock.advance(seconds: 1)
            await h.register("c", #""appId": "com.acme.two""#)
            h.clock.advance(seconds: 1)
            await h.register("d", #""appId": "com.acme.two""#)
            let listed = await h.send("GET", "/v1/devices").json["devices"]?.array ?? []
            #expect(listed.count == 4)
            h.clock.advance(seconds: 1)
            await h.register("e", #""appId": "com.acme.one""#)
            let after = await h.send("GET", "/v1/devices").json["devices"]?.array ?? []
            let ids = after.compactMap { d in d["appId"]?.string.map { "\($0)/\(d["deviceId"]?.string ?? "")" } }
            #expect(ids == ["com.acme.one/e", "com.acme.two/d", "com.acme.two/c", "com.acme.one/b"])
        }
    }

    @Test func theOneOwnerRuleIsGlobalAcrossApps() async throws {
        try await Harness.with { h in
            await h.register("d1", #""appId": "com.acme.one", "pushToken": "\#(token(7))""#)
            await h.register("d2", #""appId": "com.acme.two", "pushToken": "\#(token(7))""#)
            let holders = await h.senderDevices("alice").filter { $0["pushToken"]?.string == token(7) }
            #expect(holders.count == 1)
            #expect(holders.first?["appId"]?.string == "com.acme.two")
        }
    }

    static let badAppIds: [(String, String)] = [
        (#""appId": 5"#, "must be a string"),
        (#""appId": """#, "must not be empty"),
        (#""appId": "com.acme/one""#, "contains a character"),
        (#""appId": "com acme""#, "contains a character"),
        (#""appId": "com_acme""#, "contains a character"),
        (#""appId": "caf\u00e9""#, "contains a character"),
        (#""appId": "\#(String(repeating: "a", count: 156))""#, "is too long"),
    ]

    @Test(arguments: badAppIds)
    func aBadAppIdInARegistrationIsAFieldError(_ member: String, _ problem: String) async throws {
        try await Harness.with { h in
            let posts = [
                ("/v1/devices", #"{"deviceId": "d1", \#(member)}"#),
                ("/v1/devices/push-to-start-token", #"{"deviceId": "d1", "token": "\#(token(1))", \#(member)}"#),
                ("/v1/activities/m1/activity-token", #"{"deviceId": "d1", "token": "\#(token(2))", \#(member)}"#),
            ]
            for (path, body) in posts {
                let reply = await h.send("POST", path, body: body)
                #expect(reply.status == 400, "\(path)")
                #expect(reply.errorCode == "invalid_field", "\(path)")
                #expect(reply.errorMessage.hasPrefix("appId \(problem)"), "\(path): \(reply.errorMessage)")
            }
            #expect(await h.send("GET", "/v1/devices").json["devices"]?.array.isEmpty == true)
        }
    }

    @Test func theLongestAppIdIsAccepted() async throws {
        let longest = String(repeating: "a", count: 154) + "."
        try await Harness.with(apps: try DeclaredApps([longest])) { h in
            let reply = await h.register("d1", #""appId": "\#(longest)""#)
            #expect(reply.status == 201)
            #expect(reply.json["device"]?["appId"]?.string == longest)
        }
    }

    /// d1 in two apps, each with a push token, a push-to-start token and an activity token for m1.
    private func loadTwoApps(_ h: Harness) async {
        for (app, base) in [("com.acme.one", UInt8(10)), ("com.acme.two", UInt8(20))] {
            #expect(await h.register("d1", #""appId": "\#(app)", "pushToken": "\#(token(base))""#).status == 201)
            #expect(await h.send("POST", "/v1/devices/push-to-start-token",
                                 body: #"{"deviceId": "d1", "appId": "\#(app)", "token": "\#(token(base + 1))"}"#).status == 200)
            #expect(await h.send("POST", "/v1/activities/m1/activity-token",
                                 body: #"{"deviceId": "d1", "appId": "\#(app)", "token": "\#(token(base + 2))"}"#).status == 200)
        }
    }

    private func senderRecord(_ h: Harness, _ app: String) async -> JSONValue? {
        await h.senderDevices("alice").first { $0["appId"]?.string == app }
    }

    @Test func readingOneRecordNamesItsApp() async throws {
        try await Harness.with { h in
            await loadTwoApps(h)
            let two = await h.send("GET", "/v1/devices/d1?appId=com.acme.two")
            #expect(two.status == 200)
            #expect(two.json["device"]?["appId"]?.string == "com.acme.two")
            let none = await h.send("GET", "/v1/devices/d1")
            #expect(none.status == 404, "no appId is the default app, which has no d1")
            #expect(await h.send("GET", "/v1/devices/d1?appId=com.acme.three").status == 404)
            #expect(await h.send("GET", "/v1/devices/d1?appId=com.acme.one&other=x").status == 200,
                    "an unknown parameter is still ignored")
        }
    }

    @Test func theListShowsEveryAppUnlessNarrowed() async throws {
        try await Harness.with { h in
            await loadTwoApps(h)
            await h.register("d2")
            let all = await h.send("GET", "/v1/devices").json["devices"]?.array ?? []
            #expect(Set(all.compactMap { $0["appId"]?.string }) == ["com.acme.one", "com.acme.two", "default"])
            let one = await h.send("GET", "/v1/devices?appId=com.acme.one").json["devices"]?.array ?? []
            #expect(one.map { $0["appId"]?.string } == ["com.acme.one"])
            let defaults = await h.send("GET", "/v1/devices?appId=default").json["devices"]?.array ?? []
            #expect(defaults.map { $0["deviceId"]?.string } == ["d2"])
            let unknown = await h.send("GET", "/v1/devices?appId=com.acme.never")
            #expect(unknown.status == 200)
            #expect(unknown.json["devices"]?.array.isEmpty == true)
        }
    }

    @Test func signOutRemovesOneAppsRecord() async throws {
        try await Harness.with { h in
            await loadTwoApps(h)
            #expect(await h.send("DELETE", "/v1/devices/d1").status == 204, "the default app has no d1: nothing happens")
            #expect(await h.senderDevices("alice").count == 2)
            #expect(await h.send("DELETE", "/v1/devices/d1?appId=com.acme.one").status == 204)
            let left = await h.senderDevices("alice")
            #expect(left.map { $0["appId"]?.string } == ["com.acme.two"])
            #expect(left.first?["pushToken"]?.string == token(20))
            #expect(left.first?["pushToStartToken"]?.string == token(21))
            let fanOut = await h.send("GET", "/internal/v1/activities/m1/tokens", as: .apiKey).json["tokens"]?.array ?? []
            #expect(fanOut.map { $0["token"]?.string } == [token(22)])
        }
    }

    @Test func aSequencedSignOutTombstonesOneApp() async throws {
        try await Harness.with { h in
            await h.register("d1", #""appId": "com.acme.one", "sequence": 1"#)
            await h.register("d1", #""appId": "com.acme.two", "sequence": 1"#)
            #expect(await h.send("DELETE", "/v1/devices/d1?sequence=3&appId=com.acme.one").status == 204)
            #expect(await h.register("d1", #""appId": "com.acme.one", "sequence": 2"#).status == 409)
            #expect(await h.register("d1", #""appId": "com.acme.two", "sequence": 2"#).status == 200)
            #expect(await h.send("DELETE", "/v1/devices/d1?appId=com.acme.two&sequence=5").status == 204)
            #expect(await h.register("d1", #""appId": "com.acme.two", "sequence": 4"#).status == 409)
        }
    }

    @Test func theTokenDeletesRemoveOneAppsToken() async throws {
        try await Harness.with { h in
            await loadTwoApps(h)
            #expect(await h.send("DELETE", "/v1/devices/d1/push-to-start-token?appId=com.acme.two").status == 204)
            #expect(await senderRecord(h, "com.acme.two")?["pushToStartToken"]?.isNull == true)
            #expect(await senderRecord(h, "com.acme.one")?["pushToStartToken"]?.string == token(11))
            #expect(await h.send("DELETE", "/v1/devices/d1/push-to-start-token").status == 204)
            #expect(await senderRecord(h, "com.acme.one")?["pushToStartToken"]?.string == token(11))

            #expect(await h.send("DELETE", "/v1/activities/m1/activity-token?deviceId=d1&appId=com.acme.one").status == 204)
            #expect(await senderRecord(h, "com.acme.one")?["activityCount"]?.int == 0)
            #expect(await senderRecord(h, "com.acme.two")?["activityCount"]?.int == 1)
            #expect(await h.send("DELETE", "/v1/activities/m1/activity-token?appId=com.acme.two&deviceId=d1").status == 204)
            #expect(await senderRecord(h, "com.acme.two")?["activityCount"]?.int == 0)
        }
    }

    static let appIdQueryRoutes: [(String, String)] = [
        ("GET", "/v1/devices?"),
        ("GET", "/v1/devices/d1?"),
        ("DELETE", "/v1/devices/d1?"),
        ("DELETE", "/v1/devices/d1?sequence=9&"),
        ("DELETE", "/v1/devices/d1/push-to-start-token?"),
        ("DELETE", "/v1/activities/m1/activity-token?deviceId=d1&"),
    ]

    static let badAppIdQueries: [(String, String)] = [
        ("appId=", "appId must not be empty"),
        ("appId=com.acme%2Fone", "appId contains a character"),
        ("appId=com%20acme", "appId contains a character"),
        ("appId=com_acme", "appId contains a character"),
        ("appId=\(String(repeating: "a", count: 156))", "appId is too long"),
        ("appId=%zz", "appId is not valid percent-encoding"),
        ("appId=com.acme.one&appId=com.acme.one", "appId must be given at most once"),
    ]

    @Test(arguments: appIdQueryRoutes)
    func aBadAppIdQueryIsAFieldErrorAndChangesNothing(_ method: String, _ prefix: String) async throws {
        try await Harness.with { h in
            await loadTwoApps(h)
            let before = await h.senderDevices("alice")
            for (query, message) in Self.badAppIdQueries {
                let reply = await h.send(method, prefix + query)
                #expect(reply.status == 400, "\(method) \(prefix)\(query)")
                #expect(reply.errorCode == "invalid_field", "\(method) \(prefix)\(query)")
                #expect(reply.errorMessage.hasPrefix(message), "\(method) \(prefix)\(query): \(reply.errorMessage)")
            }
            #expect(await h.senderDevices("alice") == before)
        }
    }

    // MARK: The sender's reads

    @Test func aUsersDevicesCanBeNarrowedToOneApp() async throws {
        try await Harness.with { h in
            await loadTwoApps(h)
            let all = await h.send("GET", "/internal/v1/users/alice/devices", as: .apiKey).json["devices"]?.array ?? []
            #expect(Set(all.compactMap { $0["appId"]?.string }) == ["com.acme.one", "com.acme.two"])
            let two = await h.send("GET", "/internal/v1/users/alice/devices?appId=com.acme.two", as: .apiKey)
            #expect(two.status == 200)
            let devices = two.json["devices"]?.array ?? []
            #expect(devices.map { $0["appId"]?.string } == ["com.acme.two"])
            #expect(devices.first?["pushToken"]?.string == token(20))
            #expect(devices.first?["pushToStartToken"]?.string == token(21))
            let never = await h.send("GET", "/internal/v1/users/alice/devices?appId=com.acme.never", as: .apiKey)
            #expect(never.json["devices"]?.array.isEmpty == true)
        }
    }

    @Test func aLookupCanBeNarrowedToOneApp() async throws {
        try await Harness.with { h in
            await loadTwoApps(h)
            await h.register("b1", user: "bob", #""appId": "com.acme.two", "pushToken": "\#(token(30))""#)
            await h.register("c1", user: "carol", #""pushToken": "\#(token(31))""#)
            let lookup = { (body: String) async -> Reply in
                await h.send("POST", "/internal/v1/users/lookup", body: body, as: .apiKey)
            }
            let all = await lookup(#"{"userIds": ["alice", "bob", "carol"]}"#)
            #expect(all.json["users"]?["alice"]?.array.count == 2)
            #expect(all.json["users"]?["bob"]?[0]?["appId"]?.string == "com.acme.two")
            #expect(all.json["users"]?["carol"]?[0]?["appId"]?.string == "default")
            #expect(await lookup(#"{"userIds": ["alice", "bob", "carol"], "appId": null}"#).json == all.json)

            let one = await lookup(#"{"userIds": ["alice", "bob", "carol"], "appId": "com.acme.one"}"#)
            #expect(one.status == 200)
            #expect(one.json["users"]?["alice"]?.array.map { $0["appId"]?.string } == ["com.acme.one"])
            #expect(one.json["users"]?["bob"] == nil, "bob has no device in com.acme.one")
            #expect(one.json["users"]?["carol"] == nil)
            let defaults = await lookup(#"{"userIds": ["alice", "bob", "carol"], "appId": "default"}"#)
            guard case .object(let users)? = defaults.json["users"] else {
                Issue.record("no users in \(defaults.text)"); return
            }
            #expect(users.members.keys.sorted() == ["carol"])
        }
    }

    @Test func theFanOutCanBeNarrowedToOneAppAndPagesThroughIt() async throws {
        try await Harness.with { h in
            for i in 0..<9 {
                let app = i % 3 == 0 ? "com.acme.one" : "com.acme.two"
                let reply = await h.send("POST", "/v1/activities/m1/activity-token",
                                         body: #"{"deviceId": "d\#(i)", "appId": "\#(app)", "token": "\#(token(UInt8(i + 1)))"}"#,
                                         as: .user("u\(i)"))
                #expect(reply.status == 200)
            }
            var seen: [String] = []
            var cursor: String?
            repeat {
                let query = "appId=com.acme.two&limit=2" + (cursor.map { "&cursor=\($0)" } ?? "")
                let page = await h.send("GET", "/internal/v1/activities/m1/tokens?\(query)", as: .apiKey)
                #expect(page.status == 200)
                let tokens = page.json["tokens"]?.array ?? []
                #expect(tokens.allSatisfy { $0["appId"]?.string == "com.acme.two" }, "\(page.text)")
                seen += tokens.compactMap { $0["token"]?.string }
                cursor = page.json["nextCursor"]?.string
            } while cursor != nil
            let expected = (0..<9).filter { $0 % 3 != 0 }.map { token(UInt8($0 + 1)) }
            #expect(seen.sorted() == expected.sorted())
            let one = await h.send("GET", "/internal/v1/activities/m1/tokens?appId=com.acme.one", as: .apiKey)
            #expect(one.json["tokens"]?.array.compactMap { $0["token"]?.string }.sorted()
                    == [token(1), token(4), token(7)].sorted())
            let never = await h.send("GET", "/internal/v1/activities/m1/tokens?appId=com.acme.never", as: .apiKey)
            #expect(never.status == 200)
            #expect(never.json["tokens"]?.array.isEmpty == true)
            #expect(never.json["nextCursor"]?.isNull == true)
        }
    }

    @Test func theSenderReadsRejectABadAppId() async throws {
        try await Harness.with { h in
            await loadTwoApps(h)
            for prefix in ["/internal/v1/users/alice/devices?", "/internal/v1/activities/m1/tokens?limit=5&"] {
                for (query, message) in Self.badAppIdQueries {
                    let reply = await h.send("GET", prefix + query, as: .apiKey)
                    #expect(reply.status == 400, "\(prefix)\(query)")
                    #expect(reply.errorCode == "invalid_field", "\(prefix)\(query)")
                    #expect(reply.errorMessage.hasPrefix(message), "\(prefix)\(query): \(reply.errorMessage)")
                }
            }
            for (member, problem) in Self.badAppIds {
                let reply = await h.send("POST", "/internal/v1/users/lookup",
                                         body: #"{"userIds": ["alice"], \#(member)}"#, as: .apiKey)
                #expect(reply.status == 400, "\(member)")
                #expect(reply.errorCode == "invalid_field", "\(member)")
                #expect(reply.errorMessage.hasPrefix("appId \(problem)"), "\(member): \(reply.errorMessage)")
            }
        }
    }
}
