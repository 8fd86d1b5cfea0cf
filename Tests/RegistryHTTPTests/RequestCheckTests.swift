import JWT
import Testing
@testable import RegistryHTTP

/// The contract's check order and every rejection: route, credential, media
/// type, size, JSON, fields — and that a rejected request changes nothing.
@Suite struct RequestCheckTests {
    @Test func missingCredentialIs401WithChallenge() async throws {
        try await Harness.with { h in
            let reply = await h.send("GET", "/v1/devices", as: .none)
            #expect(reply.status == 401)
            #expect(reply.errorCode == "unauthenticated")
            #expect(reply.header("WWW-Authenticate") == "Bearer")
            #expect(reply.errorMessage.contains("Authorization"))
        }
    }

    @Test func badCredentialsAre401() async throws {
        try await Harness.with { h in
            let expired = h.jwt(user: "alice", expiresIn: -120)
            let wrongKey = JWTSigner.hs256(claims: ["sub": .string("alice"), "exp": .int(h.clock.now().milliseconds / 1000 + 60)],
                                           secret: Array("other".utf8))
            let badSub = h.jwt(user: "bad\u{01}user")
            for credential in [expired, wrongKey, badSub, "garbage", "a.b.c"] {
                let reply = await h.send("GET", "/v1/devices", as: .bearer(credential))
                #expect(reply.status == 401, "\(credential)")
                #expect(reply.header("WWW-Authenticate") == "Bearer")
            }
            let notBearer = await h.send("GET", "/v1/devices", as: .none, headers: [("Authorization", "Basic YTpi")])
            #expect(notBearer.status == 401)
            let wrongAPIKey = await h.send("GET", "/internal/v1/stats", as: .bearer("not-the-key"))
            #expect(wrongAPIKey.status == 401)
        }
    }

    @Test func validCredentialOfTheWrongKindIs403() async throws {
        try await Harness.with { h in
            let deviceOnInternal = await h.send("GET", "/internal/v1/stats", as: .user("alice"))
            #expect(deviceOnInternal.status == 403)
            #expect(deviceOnInternal.errorCode == "forbidden")
            let keyOnDevice = await h.send("GET", "/v1/devices", as: .apiKey)
            #expect(keyOnDevice.status == 403)
            let keyOnMetrics = await h.send("GET", "/metrics", as: .user("alice"))
            #expect(keyOnMetrics.status == 403)
        }
    }

    @Test func routeIsCheckedBeforeCredential() async throws {
        try await Harness.with { h in
            #expect(await h.send("GET", "/v1/nothing", as: .none).status == 404)
            let wrongMethod = await h.send("PATCH", "/v1/devices", as: .none)
            #expect(wrongMethod.status == 405)
            #expect(wrongMethod.header("Allow") == "GET, POST, HEAD")
        }
    }

    @Test func credentialIsCheckedBeforeMediaType() async throws {
        try await Harness.with { h in
            let reply = await h.send("POST", "/v1/devices", body: "x", as: .none, contentType: "text/plain")
            #expect(reply.status == 401)
        }
    }

    @Test func mediaTypeIsCheckedBeforeSizeAndJSON() async throws {
        try await Harness.with { h in
            let big = String(repeating: "x", count: 20_000)
            #expect(await h.send("POST", "/v1/devices", body: big, contentType: "text/plain").status == 415)
            #expect(await h.send("POST", "/v1/devices", body: "{}", contentType: nil).status == 415)
            let charset = await h.send("POST", "/v1/devices", body: #"{"deviceId": "d1"}"#,
                                       contentType: "Application/JSON; charset=utf-8")
            #expect(charset.status == 201)
        }
    }

    @Test func sizeIsCheckedBeforeJSON() async throws {
        try await Harness.with { h in
            let big = String(repeating: "x", count: 16 * 1024 + 1)
            let reply = await h.send("POST", "/v1/devices", body: big)
            #expect(reply.status == 413)
            #expect(reply.errorCode == "payload_too_large")
            let internalBig = "{\"userIds\": [], \"pad\": \"" + String(repeating: "x", count: 100_000) + "\"}"
            #expect(await h.send("POST", "/internal/v1/users/lookup", body: internalBig, as: .apiKey).status == 200)
        }
    }

    @Test(arguments: ["", "nope", "[]", "\"x\"", "{\"deviceId\": ", String(repeating: "[", count: 5000)])
    func nonObjectBodiesAreInvalidJSON(_ body: String) async throws {
        try await Harness.with { h in
            let reply = await h.send("POST", "/v1/devices", body: body)
            #expect(reply.status == 400)
            #expect(reply.errorCode == "invalid_json")
        }
    }

    @Test(arguments: [
        (#"{}"#, "deviceId"),
        (#"{"deviceId": 5}"#, "deviceId"),
        (#"{"deviceId": ""}"#, "deviceId"),
        (#"{"deviceId": "a/b"}"#, "deviceId"),
        (#"{"deviceId": "a\u0000b"}"#, "deviceId"),
        (#"{"deviceId": "\#(String(repeating: "x", count: 129))"}"#, "deviceId"),
        (#"{"deviceId": "d", "pushToken": 12}"#, "pushToken"),
        (#"{"deviceId": "d", "pushToken": "abc"}"#, "pushToken"),
        (#"{"deviceId": "d", "pushToken": "zz\#(String(repeating: "0", count: 62))"}"#, "pushToken"),
        (#"{"deviceId": "d", "pushToken": "\#(String(repeating: "ab", count: 513))"}"#, "pushToken"),
        (#"{"deviceId": "d", "platform": "windows"}"#, "platform"),
        (#"{"deviceId": "d", "environment": "staging"}"#, "environment"),
        (#"{"deviceId": "d", "osVersion": "\#(String(repeating: "1", count: 33))"}"#, "osVersion"),
        (#"{"deviceId": "d", "appVersion": 2}"#, "appVersion"),
        (#"{"deviceId": "d", "sequence": -1}"#, "sequence"),
        (#"{"deviceId": "d", "sequence": 1.5}"#, "sequence"),
        (#"{"deviceId": "d", "sequence": 18446744073709551616}"#, "sequence"),
        (#"{"deviceId": "d", "sequence": "1"}"#, "sequence"),
    ])
    func registerRejectsBadFieldsNamingThem(_ body: String, _ field: String) async throws {
        try await Harness.with { h in
            let reply = await h.send("POST", "/v1/devices", body: body)
            #expect(reply.status == 400)
            #expect(reply.errorCode == "invalid_field")
            #expect(reply.errorMessage.hasPrefix(field), "\(reply.errorMessage)")
            #expect(await h.send("GET", "/v1/devices").json["devices"]?.array.isEmpty == true)
        }
    }

    @Test(arguments: [
        (#"{"token": "\#(token(1))"}"#, "deviceId"),
        (#"{"deviceId": "d"}"#, "token"),
        (#"{"deviceId": "d", "token": "xyz"}"#, "token"),
        (#"{"deviceId": "d", "token": "\#(token(1))", "environment": 1}"#, "environment"),
        (#"{"deviceId": "d", "token": "\#(token(1))", "sequence": true}"#, "sequence"),
    ])
    func tokenRoutesRejectBadFields(_ body: String, _ field: String) async throws {
        try await Harness.with { h in
            for path in ["/v1/devices/push-to-start-token", "/v1/activities/m1/activity-token"] {
                let reply = await h.send("POST", path, body: body)
                #expect(reply.status == 400, "\(path)")
                #expect(reply.errorMessage.hasPrefix(field), "\(path): \(reply.errorMessage)")
            }
            #expect(await h.send("GET", "/v1/devices").json["devices"]?.array.isEmpty == true)
        }
    }

    @Test func pathSegmentsAreDecodedThenChecked() async throws {
        try await Harness.with { h in
            let slash = await h.send("GET", "/v1/devices/a%2Fb")
            #expect(slash.status == 400)
            #expect(slash.errorMessage.hasPrefix("deviceId"))
            let badEscape = await h.send("GET", "/v1/devices/a%zz")
            #expect(badEscape.errorMessage.hasPrefix("deviceId"))
            let control = await h.send("POST", "/v1/activities/a%00/activity-token",
                                       body: #"{"deviceId": "d", "token": "\#(token(1))"}"#)
            #expect(control.errorMessage.hasPrefix("activityId"))
            await h.register("a b")
            #expect(await h.send("GET", "/v1/devices/a%20b").status == 200)
        }
    }

    @Test func unknownFieldsAreIgnored() async throws {
        try await Harness.with { h in
            let reply = await h.register("d1", #""future": {"nested": [1, 2]}, "osVersion": null"#)
            #expect(reply.status == 201)
        }
    }

    @Test func noTokenEverReachesTheLog() async throws {
        try await Harness.with { h in
            await h.register("d1", #""pushToken": "\#(token(9))""#)
            await h.send("POST", "/v1/devices/push-to-start-token", body: #"{"deviceId": "d1", "token": "\#(token(8))"}"#)
            await h.send("GET", "/internal/v1/users/alice/devices", as: .apiKey)
            await h.send("POST", "/internal/v1/feedback", body: #"{"token": "\#(token(9))", "reason": "Unregistered"}"#, as: .apiKey)
            let logs = h.logs.all
            #expect(logs.contains("\"event\":\"request\""))
            #expect(!logs.contains(token(9)))
            #expect(!logs.contains(token(8)))
            #expect(!logs.contains(Harness.apiKey))
        }
    }
}
