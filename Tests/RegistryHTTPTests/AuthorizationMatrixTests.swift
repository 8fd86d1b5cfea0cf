import JSON
import Testing
@testable import RegistryHTTP

/// Every `/v1` route, as the owner of a record, as another user, and with no
/// record at all: another user's record answers byte for byte as a record
/// that does not exist, and is unchanged afterwards.
@Suite struct AuthorizationMatrixTests {
    /// One device API request, aimed at deviceId `d1` and activity `m1`.
    struct Call: CustomTestStringConvertible, Sendable {
        var method: String
        var target: String
        var body: String?
        /// What the owner of `d1` gets.
        var ownerStatus: Int
        var testDescription: String { "\(method) \(target)" }
    }

    static let calls: [Call] = [
        Call(method: "POST", target: "/v1/devices", body: #"{"deviceId": "d1", "pushToken": "\#(token(9))"}"#, ownerStatus: 200),
        Call(method: "GET", target: "/v1/devices", ownerStatus: 200),
        Call(method: "GET", target: "/v1/devices/d1", ownerStatus: 200),
        Call(method: "DELETE", target: "/v1/devices/d1", ownerStatus: 204),
        Call(method: "DELETE", target: "/v1/devices/d1?sequence=7", ownerStatus: 204),
        Call(method: "POST", target: "/v1/devices/push-to-start-token",
             body: #"{"deviceId": "d1", "token": "\#(token(8))"}"#, ownerStatus: 200),
        Call(method: "DELETE", target: "/v1/devices/d1/push-to-start-token", ownerStatus: 204),
        Call(method: "POST", target: "/v1/activities/m1/activity-token",
             body: #"{"deviceId": "d1", "token": "\#(token(7))"}"#, ownerStatus: 200),
        Call(method: "DELETE", target: "/v1/activities/m1/activity-token?deviceId=d1", ownerStatus: 204),
        // The same routes naming alice's app (docs/api.md "App families").
        Call(method: "POST", target: "/v1/devices",
             body: #"{"deviceId": "d1", "appId": "com.acme.one", "pushToken": "\#(token(9))"}"#, ownerStatus: 200),
        Call(method: "GET", target: "/v1/devices?appId=com.acme.one", ownerStatus: 200),
        Call(method: "GET", target: "/v1/devices/d1?appId=com.acme.one", ownerStatus: 200),
        Call(method: "DELETE", target: "/v1/devices/d1?appId=com.acme.one", ownerStatus: 204),
        Call(method: "DELETE", target: "/v1/devices/d1?sequence=7&appId=com.acme.one", ownerStatus: 204),
        Call(method: "POST", target: "/v1/devices/push-to-start-token",
             body: #"{"deviceId": "d1", "appId": "com.acme.one", "token": "\#(token(8))"}"#, ownerStatus: 200),
        Call(method: "DELETE", target: "/v1/devices/d1/push-to-start-token?appId=com.acme.one", ownerStatus: 204),
        Call(method: "POST", target: "/v1/activities/m1/activity-token",
             body: #"{"deviceId": "d1", "appId": "com.acme.one", "token": "\#(token(7))"}"#, ownerStatus: 200),
        Call(method: "DELETE", target: "/v1/activities/m1/activity-token?deviceId=d1&appId=com.acme.one", ownerStatus: 204),
    ]

    /// alice's d1 with a push token, a push-to-start token and an activity token.
    func loadAlice(_ h: Harness) async {
        #expect(await h.register("d1", user: "alice", #""pushToken": "\#(token(1))", "sequence": 3"#).status == 201)
        #expect(await h.send("POST", "/v1/devices/push-to-start-token",
                             body: #"{"deviceId": "d1", "token": "\#(token(2))"}"#, as: .user("alice")).status == 200)
        #expect(await h.send("POST", "/v1/activities/m1/activity-token",
                             body: #"{"deviceId": "d1", "token": "\#(token(3))"}"#, as: .user("alice")).status == 200)
    }

    /// The same for alice's d1 in a second app, `com.acme.one`.
    private func loadAlicesSecondApp(_ h: Harness) async {
        #expect(await h.register("d1", user: "alice",
                                 #""appId": "com.acme.one", "pushToken": "\#(token(4))", "sequence": 3"#).status == 201)
        #expect(await h.send("POST", "/v1/devices/push-to-start-token",
                             body: #"{"deviceId": "d1", "appId": "com.acme.one", "token": "\#(token(5))"}"#,
                             as: .user("alice")).status == 200)
        #expect(await h.send("POST", "/v1/activities/m1/activity-token",
                             body: #"{"deviceId": "d1", "appId": "com.acme.one", "token": "\#(token(6))"}"#,
                             as: .user("alice")).status == 200)
    }

    /// Everything the sender can see of alice: her devices, and her entries in m1's fan-out.
    func aliceAsStored(_ h: Harness) async -> [JSONValue] {
        let devices = await h.send("GET", "/internal/v1/users/alice/devices", as: .apiKey).json
        let fanOut = await h.send("GET", "/internal/v1/activities/m1/tokens", as: .apiKey).json["tokens"]?.array ?? []
        return [devices] + fanOut.filter { $0["userId"]?.string == "alice" }
    }

    @Test(arguments: calls)
    func anotherUsersRecordAnswersAsNoRecordAndStaysUnchanged(_ call: Call) async throws {
        var withOther: Reply?
        var withNothing: Reply?
        try await Harness.with { h in
            await loadAlice(h)
            await loadAlicesSecondApp(h)
            let before = await aliceAsStored(h)
            withOther = await h.send(call.method, call.target, body: call.body, as: .user("bob"))
            #expect(await aliceAsStored(h) == before, "alice's record changed")
        }
        try await Harness.with { h in
            withNothing = await h.send(call.method, call.target, body: call.body, as: .user("bob"))
        }
        let other = try #require(withOther), nothing = try #require(withNothing)
        #expect(other.status == nothing.status)
        #expect(other.body == nothing.body, "\(other.text) vs \(nothing.text)")
        #expect(other.headers.map { "\($0.0): \($0.1)" } == nothing.headers.map { "\($0.0): \($0.1)" })
    }

    @Test(arguments: calls)
    func theOwnerIsServed(_ call: Call) async throws {
        try await Harness.with { h in
            await loadAlice(h)
            await loadAlicesSecondApp(h)
            let reply = await h.send(call.method, call.target, body: call.body, as: .user("alice"))
            #expect(reply.status == call.ownerStatus, "\(reply.text)")
        }
    }

    @Test func theOwnersChangesLandOnlyOnTheirRecord() async throws {
        try await Harness.with { h in
            await loadAlice(h)
            await h.register("d1", user: "bob", #""pushToken": "\#(token(5))""#)
            #expect(await h.send("DELETE", "/v1/devices/d1", as: .user("alice")).status == 204)
            #expect(await h.senderDevices("alice").isEmpty)
            #expect(await h.senderDevices("bob").first?["pushToken"]?.string == token(5))
        }
    }
}
