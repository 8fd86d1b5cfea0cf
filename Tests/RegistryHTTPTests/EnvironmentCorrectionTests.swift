import JSON
import Testing
@testable import RegistryHTTP

/// docs/api.md "Environment correction": `POST /internal/v1/tokens/environment`.
@Suite struct EnvironmentCorrectionTests {
    private func correct(_ h: Harness, _ token: String, _ environment: String) async -> Reply {
        await h.send("POST", "/internal/v1/tokens/environment",
                     body: #"{"token": "\#(token)", "environment": "\#(environment)"}"#, as: .apiKey)
    }

    private func history(_ h: Harness, _ user: String = "alice") async -> [JSONValue] {
        await h.send("GET", "/internal/v1/users/\(user)/history", as: .apiKey).json["events"]?.array ?? []
    }

    @Test func aPushTokensEnvironmentFlipsInTheSenderViewAndTheHistory() async throws {
        try await Harness.with { h in
            await h.register("d1", #""pushToken": "\#(token(1))""#)
            #expect(await h.senderDevices("alice").first?["environment"]?.string == "production")
            h.clock.advance(seconds: 2)
            let reply = await correct(h, token(1), "sandbox")
            #expect(reply.status == 200)
            #expect(reply.text == #"{"updated":1}"#)
            let device = await h.senderDevices("alice").first
            #expect(device?["environment"]?.string == "sandbox")
            #expect(device?["pushToken"]?.string == token(1))
            #expect(await h.send("GET", "/v1/devices/d1").json["device"]?["environment"]?.string == "sandbox")
            let event = await history(h).first
            #expect(event?["action"]?.string == "environmentCorrected")
            #expect(event?["kind"]?.string == "push")
            #expect(event?["deviceId"]?.string == "d1")
            #expect(event?["appId"]?.string == "default")
            #expect(event?["reason"]?.isNull == true)
            #expect(event?["feedbackReason"]?.isNull == true)
            #expect(event?["activityId"]?.isNull == true)
            #expect(event?["tokenFingerprint"]?.string == TokenHistoryTests.fingerprints[1])
            #expect(event?["at"]?.string == "2026-12-02T11:04:07.123Z")

            #expect(await correct(h, token(1), "production").json["updated"]?.int == 1)
            #expect(await h.senderDevices("alice").first?["environment"]?.string == "production")
        }
    }

    @Test func aPushToStartTokensEnvironmentFlips() async throws {
        try await Harness.with { h in
            await h.send("POST", "/v1/devices/push-to-start-token",
                         body: #"{"deviceId": "d1", "token": "\#(token(2))", "environment": "sandbox"}"#)
            #expect(await correct(h, token(2), "production").json["updated"]?.int == 1)
            #expect(await h.senderDevices("alice").first?["pushToStartEnvironment"]?.string == "production")
            let event = await history(h).first
            #expect(event?["kind"]?.string == "pushToStart")
            #expect(event?["action"]?.string == "environmentCorrected")
            #expect(event?["tokenFingerprint"]?.string == TokenHistoryTests.fingerprints[2])
        }
    }

    @Test func anActivityTokensEnvironmentFlipsInTheFanOut() async throws {
        try await Harness.with { h in
            await h.send("POST", "/v1/activities/m1/activity-token",
                         body: #"{"deviceId": "d1", "appId": "com.acme.one", "token": "\#(token(3))"}"#)
            #expect(await correct(h, token(3), "sandbox").json["updated"]?.int == 1)
            let entry = await h.send("GET", "/internal/v1/activities/m1/tokens", as: .apiKey).json["tokens"]?[0]
            #expect(entry?["environment"]?.string == "sandbox")
            #expect(entry?["token"]?.string == token(3))
            let event = await history(h).first
            #expect(event?["kind"]?.string == "activity")
            #expect(event?["activityId"]?.string == "m1")
            #expect(event?["appId"]?.string == "com.acme.one")
            #expect(event?["action"]?.string == "environmentCorrected")
        }
    }

    @Test func everyHolderIsCorrectedAndHexMatchesInAnyCase() async throws {
        try await Harness.with { h in
            await h.send("POST", "/v1/devices/push-to-start-token", body: #"{"deviceId": "d1", "token": "\#(token(10))"}"#)
            await h.send("POST", "/v1/activities/m1/activity-token", body: #"{"deviceId": "d2", "token": "\#(token(10))"}"#)
            let reply = await correct(h, token(10).uppercased(), "sandbox")
            #expect(reply.json["updated"]?.int == 2)
            let pushToStart = await h.senderDevices("alice").first { $0["deviceId"]?.string == "d1" }
            #expect(pushToStart?["pushToStartEnvironment"]?.string == "sandbox")
            let entry = await h.send("GET", "/internal/v1/activities/m1/tokens", as: .apiKey).json["tokens"]?[0]
            #expect(entry?["environment"]?.string == "sandbox")
            #expect(await history(h).prefix(2).allSatisfy { $0["action"]?.string == "environmentCorrected" })
        }
    }

    @Test func nothingToCorrectIsZeroAndNoEvent() async throws {
        try await Harness.with { h in
            await h.register("d1", #""pushToken": "\#(token(1))""#)
            let before = await history(h)
            #expect(await correct(h, token(9), "sandbox").text == #"{"updated":0}"#)
            #expect(await correct(h, token(1), "production").json["updated"]?.int == 0, "already production")
            #expect(await history(h) == before)
            #expect(await h.senderDevices("alice").first?["environment"]?.string == "production")
        }
    }

    @Test(arguments: [
        (#"{"environment": "sandbox"}"#, "token"),
        (#"{"token": null, "environment": "sandbox"}"#, "token"),
        (#"{"token": 5, "environment": "sandbox"}"#, "token"),
        (#"{"token": "", "environment": "sandbox"}"#, "token"),
        (#"{"token": "a b", "environment": "sandbox"}"#, "token"),
        (#"{"token": "\#(String(repeating: "a", count: 4097))", "environment": "sandbox"}"#, "token"),
        (#"{"token": "abc"}"#, "environment"),
        (#"{"token": "abc", "environment": null}"#, "environment"),
        (#"{"token": "abc", "environment": "staging"}"#, "environment"),
        (#"{"token": "abc", "environment": "Sandbox"}"#, "environment"),
        (#"{"token": "abc", "environment": 1}"#, "environment"),
    ])
    func badFieldsAreNamed(_ body: String, _ field: String) async throws {
        try await Harness.with { h in
            let reply = await h.send("POST", "/internal/v1/tokens/environment", body: body, as: .apiKey)
            #expect(reply.status == 400)
            #expect(reply.errorCode == "invalid_field")
            #expect(reply.errorMessage.hasPrefix(field), "\(reply.errorMessage)")
        }
    }

    @Test func theRequestChecksRunInTheContractsOrder() async throws {
        try await Harness.with { h in
            let path = "/internal/v1/tokens/environment"
            let body = #"{"token": "\#(token(1))", "environment": "sandbox"}"#
            #expect(await h.send("POST", path, body: body, as: .none).status == 401)
            let device = await h.send("POST", path, body: body, as: .user("alice"))
            #expect(device.status == 403)
            #expect(device.errorCode == "forbidden")
            #expect(await h.send("POST", path, body: body, as: .apiKey, contentType: "text/plain").status == 415)
            for notAnObject in ["", "[]", "nope"] {
                let reply = await h.send("POST", path, body: notAnObject, as: .apiKey)
                #expect(reply.status == 400)
                #expect(reply.errorCode == "invalid_json", "\(notAnObject)")
            }
            let get = await h.send("GET", path, as: .apiKey)
            #expect(get.status == 405)
            #expect(get.header("Allow") == "POST")
            #expect(await h.send("POST", "/internal/v1/tokens", body: body, as: .apiKey).status == 404)
            let unknownMember = await h.send("POST", path, body: #"{"token": "abc", "environment": "sandbox", "x": 1}"#,
                                             as: .apiKey)
            #expect(unknownMember.status == 200)
        }
    }

    @Test func theTokenNeverReachesTheLogAndTheRouteIsCounted() async throws {
        try await Harness.with { h in
            await h.register("d1", #""pushToken": "\#(token(1))""#)
            await correct(h, token(1), "sandbox")
            #expect(!h.logs.all.contains(token(1)))
            let metrics = await h.send("GET", "/metrics", as: .apiKey).text
            #expect(metrics.contains(#"registry_http_requests_total{route="POST /internal/v1/tokens/environment",status="200"} 1"#))
        }
    }

    /// FCM tokens are case-sensitive: as with feedback, a token's lowercase
    /// form matches only APNs holders, so correcting "ABAB…" leaves an FCM
    /// device holding "abab…" (another token) alone.
    @Test func anUppercaseTokenMatchesOnlyAPNsHoldersOfItsLowercaseForm() async throws {
        try await Harness.with { h in
            let lower = String(repeating: "ab", count: 16)
            await h.register("f1", #""platform": "fcm", "pushToken": "\#(lower)""#)
            await h.send("POST", "/v1/devices/push-to-start-token", body: #"{"deviceId": "a1", "token": "\#(lower)"}"#)
            let fcmBefore = await history(h)
            let reply = await correct(h, lower.uppercased(), "sandbox")
            #expect(reply.json["updated"]?.int == 1, "\(reply.text)")
            let devices = await h.senderDevices("alice")
            let fcm = devices.first { $0["deviceId"]?.string == "f1" }
            #expect(fcm?["environment"]?.string == "production")
            let apns = devices.first { $0["deviceId"]?.string == "a1" }
            #expect(apns?["pushToStartEnvironment"]?.string == "sandbox")
            let added = await history(h).dropLast(fcmBefore.count)
            #expect(added.map { "\($0["deviceId"]?.string ?? "") \($0["kind"]?.string ?? "")" } == ["a1 pushToStart"])

            #expect(await correct(h, lower, "sandbox").json["updated"]?.int == 1, "the FCM token as sent matches it exactly")
            #expect(await h.senderDevices("alice").first { $0["deviceId"]?.string == "f1" }?["environment"]?.string == "sandbox")
        }
    }
}
