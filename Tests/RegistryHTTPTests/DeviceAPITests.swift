import Testing
@testable import RegistryHTTP

@Suite struct DeviceAPITests {
    @Test func launchUpsertCreatesThenUpdates() async throws {
        try await Harness.with { h in
            let created = await h.register("d1", #""pushToken": "\#(token(1))", "osVersion": "18.2", "appVersion": "2.1.0""#)
            #expect(created.status == 201)
            let device = created.json["device"]
            #expect(device?["deviceId"]?.string == "d1")
            #expect(device?["platform"]?.string == "apns")
            #expect(device?["environment"]?.string == "production")
            #expect(device?["osVersion"]?.string == "18.2")
            #expect(device?["hasPushToken"]?.bool == true)
            #expect(device?["hasPushToStartToken"]?.bool == false)
            #expect(device?["activityCount"]?.int == 0)
            #expect(device?["sequence"]?.isNull == true)
            #expect(device?["createdAt"]?.string == "2026-12-02T11:04:05.123Z")
            #expect(!created.text.contains(token(1)))
            #expect(created.header("Content-Type") == "application/json")

            h.clock.advance(seconds: 10)
            let again = await h.register("d1", #""pushToken": "\#(token(1))""#)
            #expect(again.status == 200)
            #expect(again.json["device"]?["lastSeenAt"]?.string == "2026-12-02T11:04:15.123Z")
            #expect(again.json["device"]?["createdAt"]?.string == "2026-12-02T11:04:05.123Z")
            #expect(again.json["device"]?["osVersion"]?.string == "18.2")
        }
    }

    @Test func omittedPushTokenKeepsItAndNullRemovesIt() async throws {
        try await Harness.with { h in
            await h.register("d1", #""pushToken": "\#(token(1))""#)
            let kept = await h.register("d1", #""appVersion": "3.0""#)
            #expect(kept.json["device"]?["hasPushToken"]?.bool == true)
            #expect(kept.json["device"]?["appVersion"]?.string == "3.0")
            let removed = await h.register("d1", #""pushToken": null"#)
            #expect(removed.json["device"]?["hasPushToken"]?.bool == false)
            #expect(await h.senderDevices("alice").first?["pushToken"]?.isNull == true)
        }
    }

    @Test func newPushTokenRotatesInPlace() async throws {
        try await Harness.with { h in
            await h.register("d1", #""pushToken": "\#(token(1))""#)
            await h.register("d1", #""pushToken": "\#(token(2).uppercased())""#)
            let devices = await h.senderDevices("alice")
            #expect(devices.count == 1)
            #expect(devices.first?["pushToken"]?.string == token(2))
        }
    }

    @Test func listsMostRecentlySeenFirstTiesByDeviceId() async throws {
        try await Harness.with { h in
            await h.register("b")
            await h.register("a")
            h.clock.advance(seconds: 1)
            await h.register("c")
            let list = await h.send("GET", "/v1/devices")
            #expect(list.status == 200)
            #expect(list.json["devices"]?.array.compactMap { $0["deviceId"]?.string } == ["c", "a", "b"])
        }
    }

    @Test func anotherUsersDeviceAnswersAsMissing() async throws {
        try await Harness.with { h in
            await h.register("d1", user: "bob")
            let read = await h.send("GET", "/v1/devices/d1")
            #expect(read.status == 404)
            #expect(read.errorCode == "not_found")
            #expect(await h.send("GET", "/v1/devices").json["devices"]?.array.isEmpty == true)
            #expect(await h.send("DELETE", "/v1/devices/d1").status == 204)
            #expect(await h.send("GET", "/v1/devices/d1", as: .user("bob")).status == 200)
        }
    }

    @Test func signOutRemovesDeviceAndAllItsTokens() async throws {
        try await Harness.with { h in
            await h.register("d1", #""pushToken": "\#(token(1))""#)
            #expect(await h.send("POST", "/v1/devices/push-to-start-token",
                                 body: #"{"deviceId": "d1", "token": "\#(token(2))"}"#).status == 200)
            #expect(await h.send("POST", "/v1/activities/m1/activity-token",
                                 body: #"{"deviceId": "d1", "token": "\#(token(3))"}"#).status == 200)
            let deleted = await h.send("DELETE", "/v1/devices/d1")
            #expect(deleted.status == 204)
            #expect(deleted.body.isEmpty)
            #expect(await h.send("GET", "/v1/devices/d1").status == 404)
            let fanOut = await h.send("GET", "/internal/v1/activities/m1/tokens", as: .apiKey)
            #expect(fanOut.json["tokens"]?.array.isEmpty == true)
            #expect(await h.send("DELETE", "/v1/devices/d1").status == 204)
        }
    }

    @Test func pushToStartCreatesTheDeviceAndCanBeRemoved() async throws {
        try await Harness.with { h in
            let set = await h.send("POST", "/v1/devices/push-to-start-token",
                                   body: #"{"deviceId": "d9", "token": "\#(token(4))", "environment": "sandbox"}"#)
            #expect(set.status == 200)
            #expect(set.json["device"]?["hasPushToStartToken"]?.bool == true)
            #expect(set.json["device"]?["hasPushToken"]?.bool == false)
            #expect(!set.text.contains(token(4)))
            let sender = await h.senderDevices("alice")
            #expect(sender.first?["pushToStartToken"]?.string == token(4))
            #expect(sender.first?["pushToStartEnvironment"]?.string == "sandbox")
            #expect(await h.send("DELETE", "/v1/devices/d9/push-to-start-token").status == 204)
            #expect(await h.send("GET", "/v1/devices/d9").json["device"]?["hasPushToStartToken"]?.bool == false)
        }
    }

    @Test func activityTokenRegistersAndRemoves() async throws {
        try await Harness.with { h in
            let set = await h.send("POST", "/v1/activities/match%2042/activity-token",
                                   body: #"{"deviceId": "d1", "token": "\#(token(5))"}"#)
            #expect(set.status == 200)
            #expect(set.json["activityId"]?.string == "match 42")
            #expect(set.json["deviceId"]?.string == "d1")
            #expect(set.json["lastSeenAt"]?.string == "2026-12-02T11:04:05.123Z")
            #expect(!set.text.contains(token(5)))
            #expect(await h.send("GET", "/v1/devices/d1").json["device"]?["activityCount"]?.int == 1)
            let missingDevice = await h.send("DELETE", "/v1/activities/match%2042/activity-token")
            #expect(missingDevice.status == 400)
            #expect(missingDevice.errorMessage.hasPrefix("deviceId"))
            #expect(await h.send("DELETE", "/v1/activities/match%2042/activity-token?deviceId=d1").status == 204)
            #expect(await h.send("GET", "/v1/devices/d1").json["device"]?["activityCount"]?.int == 0)
        }
    }

    @Test func olderSequenceIsStaleAndEqualIsAReplay() async throws {
        try await Harness.with { h in
            #expect(await h.register("d1", #""sequence": 5, "appVersion": "1""#).status == 201)
            let stale = await h.register("d1", #""sequence": 4, "appVersion": "2""#)
            #expect(stale.status == 409)
            #expect(stale.errorCode == "stale_write")
            h.clock.advance(seconds: 5)
            let replay = await h.register("d1", #""sequence": 5, "appVersion": "3""#)
            #expect(replay.status == 200)
            #expect(replay.json["device"]?["appVersion"]?.string == "1")
            #expect(replay.json["device"]?["lastSeenAt"]?.string == "2026-12-02T11:04:10.123Z")
            let max = await h.register("d1", #""sequence": 18446744073709551615"#)
            #expect(max.json["device"]?["sequence"] == .number("18446744073709551615"))
        }
    }

    @Test func signOutWithSequenceLeavesATombstone() async throws {
        try await Harness.with { h in
            await h.register("d1", #""sequence": 1"#)
            #expect(await h.send("DELETE", "/v1/devices/d1?sequence=3").status == 204)
            let delayed = await h.register("d1", #""sequence": 2"#)
            #expect(delayed.status == 409)
            #expect(delayed.errorCode == "stale_write")
            #expect(await h.register("d1", #""sequence": 3"#).status == 409)
            #expect(await h.register("d1", #""sequence": 4"#).status == 201)
            let badSequence = await h.send("DELETE", "/v1/devices/d1?sequence=-1")
            #expect(badSequence.status == 400)
            #expect(badSequence.errorMessage.hasPrefix("sequence"))
        }
    }

    @Test func reinstallAndAccountSwitchMoveTheToken() async throws {
        try await Harness.with { h in
            await h.register("old", #""pushToken": "\#(token(7))""#)
            await h.register("new", #""pushToken": "\#(token(7))""#)
            #expect(await h.send("GET", "/v1/devices/old").status == 404)
            await h.register("bobs", user: "bob", #""pushToken": "\#(token(7))""#)
            #expect(await h.send("GET", "/v1/devices").json["devices"]?.array.isEmpty == true)
            #expect(await h.senderDevices("bob").first?["pushToken"]?.string == token(7))
        }
    }

    @Test func deviceCapEvictsLeastRecentlySeen() async throws {
        try await Harness.with(maxDevicesPerUser: 2) { h in
            await h.register("first")
            h.clock.advance(seconds: 1)
            await h.register("second")
            h.clock.advance(seconds: 1)
            await h.register("third")
            let ids = await h.send("GET", "/v1/devices").json["devices"]?.array.compactMap { $0["deviceId"]?.string }
            #expect(ids == ["third", "second"])
        }
    }

    @Test func fcmPlatformTakesFCMTokens() async throws {
        try await Harness.with { h in
            let ok = await h.register("a1", #""platform": "fcm", "pushToken": "fcm:Token_1.x-y""#)
            #expect(ok.status == 201)
            #expect(ok.json["device"]?["platform"]?.string == "fcm")
            let bad = await h.register("a2", #""platform": "apns", "pushToken": "fcm:Token_1.x-y""#)
            #expect(bad.status == 400)
            #expect(bad.errorMessage.hasPrefix("pushToken"))
            let storedPlatform = await h.register("a1", #""pushToken": "fcm:Other""#)
            #expect(storedPlatform.status == 200)
        }
    }
}
