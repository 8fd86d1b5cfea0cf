import JSON
import Testing
@testable import RegistryHTTP

/// API.md v1.1 "App families": records keyed by (user, app, device), the
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
        try await Harness.with { h in
            let longest = String(repeating: "a", count: 154) + "."
            let reply = await h.register("d1", #""appId": "\#(longest)""#)
            #expect(reply.status == 201)
            #expect(reply.json["device"]?["appId"]?.string == longest)
        }
    }
}
