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
}
