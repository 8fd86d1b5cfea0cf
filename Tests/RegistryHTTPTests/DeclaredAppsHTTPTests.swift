import JSON
import RegistryCore
import Testing
@testable import RegistryHTTP

/// docs/api.md "Apps are declared by the operator", over the device API.
@Suite struct DeclaredAppsHTTPTests {
    @Test func aRegistrationNamingAnUndeclaredAppIsA400NamingAppId() async throws {
        try await Harness.with { h in
            let refused = [
                await h.register("d1", #""appId": "com.example.unlisted""#),
                await h.send("POST", "/v1/devices/push-to-start-token",
                             body: #"{"deviceId": "d1", "token": "\#(token(1))", "appId": "com.example.unlisted"}"#),
                await h.send("POST", "/v1/activities/m1/activity-token",
                             body: #"{"deviceId": "d1", "token": "\#(token(2))", "appId": "com.example.unlisted"}"#),
            ]
            for reply in refused {
                #expect(reply.status == 400 && reply.errorCode == "invalid_field")
                #expect(reply.errorMessage == "appId is not a declared app")
            }
            let stats = try await h.store.stats()
            #expect(stats.devices == 0)
        }
    }

    /// A read naming an undeclared app finds nothing, even when records of
    /// that app are stored (an app dropped from the list).
    @Test func readsNamingAnUndeclaredAppFindNothing() async throws {
        try await Harness.with { h in
            #expect(await h.send("GET", "/v1/devices/d1?appId=com.example.unlisted").status == 404)
            let list = await h.send("GET", "/v1/devices?appId=com.example.unlisted")
            #expect(list.status == 200 && list.json["devices"]?.array.isEmpty == true)
        }
    }

    /// The attack that locked every app out: one signed-in user sends 200
    /// requests naming made-up apps on every device route (registrations,
    /// sequenced deletes, token deletes, reads), then deletes her devices.
    /// Nothing changes for anyone: no app, tombstone or history event is
    /// stored, and another user's plain v1 registration still answers 201.
    @Test func twoHundredRequestsNamingMadeUpAppsChangeNothingForAnyoneElse() async throws {
        try await Harness.with { h in
            #expect(await h.register("bob-phone", user: "bob", #""pushToken": "\#(token(9))""#).status == 201)
            let appsBefore = try await h.store.storedApps()
            let statsBefore = try await h.store.stats()
            var statuses: [Int: Int] = [:]
            for n in 0..<40 {
                let app = "com.attacker.x\(n)"
                let replies = [
                    await h.register("d\(n)", user: "mallory", #""appId": "\#(app)", "sequence": 1"#),
                    await h.send("DELETE", "/v1/devices/d\(n)?appId=\(app)&sequence=\(n + 2)", as: .user("mallory")),
                    await h.send("DELETE", "/v1/devices/d\(n)/push-to-start-token?appId=\(app)", as: .user("mallory")),
                    await h.send("DELETE", "/v1/activities/m/activity-token?deviceId=d\(n)&appId=\(app)", as: .user("mallory")),
                    await h.send("GET", "/v1/devices/d\(n)?appId=\(app)", as: .user("mallory")),
                ]
                for reply in replies { statuses[reply.status, default: 0] += 1 }
            }
            #expect(statuses == [400: 40, 204: 120, 404: 40])
            let appsAfter = try await h.store.storedApps()
            #expect(appsAfter == appsBefore)
            let statsAfter = try await h.store.stats()
            #expect(statsAfter.devices == statsBefore.devices && statsAfter.tombstones == 0
                    && statsAfter.historyEvents == statsBefore.historyEvents)
            #expect(await h.register("carol-phone", user: "carol", #""pushToken": "\#(token(8))""#).status == 201)
        }
    }
}
