import Foundation
import Testing
@testable import RegistryHTTP

@Suite struct InternalAPITests {
    @Test func userDevicesShowsTheSenderView() async throws {
        try await Harness.with { h in
            await h.register("d1", user: "u/1", #""pushToken": "\#(token(1))", "environment": "sandbox""#)
            let reply = await h.send("GET", "/internal/v1/users/u%2F1/devices", as: .apiKey)
            #expect(reply.status == 200)
            let device = reply.json["devices"]?[0]
            #expect(device?["userId"]?.string == "u/1")
            #expect(device?["pushToken"]?.string == token(1))
            #expect(device?["environment"]?.string == "sandbox")
            #expect(device?["pushToStartToken"]?.isNull == true)
            #expect(device?["pushToStartEnvironment"]?.isNull == true)
            #expect(device?["tokenUpdatedAt"]?.string == "2026-12-02T11:04:05.123Z")
            let unknown = await h.send("GET", "/internal/v1/users/nobody/devices", as: .apiKey)
            #expect(unknown.status == 200)
            #expect(unknown.json["devices"]?.array.isEmpty == true)
        }
    }

    @Test func lookupAnswersOnlyUsersWithDevices() async throws {
        try await Harness.with { h in
            await h.register("d1", user: "a")
            await h.register("d2", user: "b")
            let reply = await h.send("POST", "/internal/v1/users/lookup", body: #"{"userIds": ["a", "b", "c"]}"#, as: .apiKey)
            #expect(reply.status == 200)
            #expect(reply.json["users"]?["a"]?.array.count == 1)
            #expect(reply.json["users"]?["b"]?[0]?["deviceId"]?.string == "d2")
            #expect(reply.json["users"]?["c"] == nil)
        }
    }

    @Test func lookupRejectsTooManyOrBadIds() async throws {
        try await Harness.with { h in
            let ids = (0...1000).map { "\"u\($0)\"" }.joined(separator: ",")
            let tooMany = await h.send("POST", "/internal/v1/users/lookup", body: #"{"userIds": [\#(ids)]}"#, as: .apiKey)
            #expect(tooMany.status == 400)
            #expect(tooMany.errorMessage.hasPrefix("userIds"))
            let notString = await h.send("POST", "/internal/v1/users/lookup", body: #"{"userIds": ["a", 1]}"#, as: .apiKey)
            #expect(notString.errorMessage.hasPrefix("userIds[1]"))
            let missing = await h.send("POST", "/internal/v1/users/lookup", body: "{}", as: .apiKey)
            #expect(missing.errorCode == "invalid_field")
        }
    }

    @Test func fanOutPagesThroughEveryTokenOnce() async throws {
        try await Harness.with { h in
            for i in 0..<7 {
                await h.send("POST", "/v1/activities/m1/activity-token",
                             body: #"{"deviceId": "d\#(i)", "token": "\#(token(UInt8(i + 1)))"}"#, as: .user("u\(i)"))
            }
            var seen: [String] = []
            var cursor: String?
            repeat {
                let query = "limit=3" + (cursor.map { "&cursor=\($0)" } ?? "")
                let page = await h.send("GET", "/internal/v1/activities/m1/tokens?\(query)", as: .apiKey)
                #expect(page.status == 200)
                seen += page.json["tokens"]?.array.compactMap { $0["token"]?.string } ?? []
                cursor = page.json["nextCursor"]?.string
                if cursor == nil { #expect(page.json["nextCursor"]?.isNull == true) }
            } while cursor != nil
            #expect(seen.sorted() == (1...7).map { token(UInt8($0)) }.sorted())
        }
    }

    @Test(arguments: ["limit=0", "limit=1001", "limit=abc", "limit=-1", "limit=1&limit=2"])
    func fanOutRejectsBadLimit(_ query: String) async throws {
        try await Harness.with { h in
            let reply = await h.send("GET", "/internal/v1/activities/m1/tokens?\(query)", as: .apiKey)
            #expect(reply.status == 400)
            #expect(reply.errorCode == "invalid_field")
            #expect(reply.errorMessage.hasPrefix("limit"))
        }
    }

    @Test func fanOutRejectsAForgedCursor() async throws {
        try await Harness.with { h in
            let reply = await h.send("GET", "/internal/v1/activities/m1/tokens?cursor=AAAA", as: .apiKey)
            #expect(reply.status == 400)
            #expect(reply.errorMessage.hasPrefix("cursor"))
        }
    }

    @Test func feedbackRemovesATokenWhereverHeld() async throws {
        try await Harness.with { h in
            await h.register("d1", #""pushToken": "\#(token(1))""#)
            let reply = await h.send("POST", "/internal/v1/feedback",
                                     body: #"{"token": "\#(token(1).uppercased())", "reason": "Unregistered"}"#, as: .apiKey)
            #expect(reply.status == 200)
            #expect(reply.json["removed"]?.int == 1)
            #expect(await h.senderDevices("alice").first?["pushToken"]?.isNull == true)
        }
    }

    @Test func feedbackKeepsATokenRegisteredAfterIt() async throws {
        try await Harness.with { h in
            await h.register("d1", #""pushToken": "\#(token(1))""#)
            let before = h.clock.now().milliseconds - 1
            let kept = await h.send("POST", "/internal/v1/feedback",
                                    body: #"{"token": "\#(token(1))", "reason": "Unregistered", "timestamp": \#(before)}"#, as: .apiKey)
            #expect(kept.json["removed"]?.int == 0)
            let after = RFC3339.format(h.clock.now().adding(seconds: 1))
            let removed = await h.send("POST", "/internal/v1/feedback",
                                       body: #"{"token": "\#(token(1))", "reason": "BadDeviceToken", "timestamp": "\#(after)"}"#, as: .apiKey)
            #expect(removed.json["removed"]?.int == 1)
        }
    }

    @Test(arguments: [
        (#"{"token": "abc", "reason": "Nope"}"#, "reason"),
        (#"{"token": "abc"}"#, "reason"),
        (#"{"reason": "Unregistered"}"#, "token"),
        (#"{"token": "a b", "reason": "Unregistered"}"#, "token"),
        (#"{"token": "abc", "reason": "Unregistered", "timestamp": "yesterday"}"#, "timestamp"),
        (#"{"token": "abc", "reason": "Unregistered", "timestamp": 1.5}"#, "timestamp"),
    ])
    func feedbackRejectsBadFields(_ body: String, _ field: String) async throws {
        try await Harness.with { h in
            let reply = await h.send("POST", "/internal/v1/feedback", body: body, as: .apiKey)
            #expect(reply.status == 400)
            #expect(reply.errorCode == "invalid_field")
            #expect(reply.errorMessage.hasPrefix(field))
        }
    }

    @Test func sweepDryRunCountsAndSweepRemoves() async throws {
        try await Harness.with(deviceTTL: .seconds(100), activityTTL: .seconds(50)) { h in
            await h.register("d1", #""pushToken": "\#(token(1))""#)
            await h.send("POST", "/v1/devices/push-to-start-token", body: #"{"deviceId": "d1", "token": "\#(token(2))"}"#)
            await h.send("POST", "/v1/activities/m1/activity-token", body: #"{"deviceId": "d1", "token": "\#(token(3))"}"#)
            h.clock.advance(seconds: 101)
            let dry = await h.send("POST", "/internal/v1/sweep", body: #"{"dryRun": true}"#, as: .apiKey)
            #expect(dry.status == 200)
            #expect(dry.json["devices"]?.int == 1)
            #expect(dry.json["pushToStartTokens"]?.int == 1)
            #expect(dry.json["activityTokens"]?.int == 1)
            #expect(dry.json["tombstones"]?.int == 0)
            #expect(await h.senderDevices("alice").count == 1)
            let real = await h.send("POST", "/internal/v1/sweep", as: .apiKey)
            #expect(real.json["devices"]?.int == 1)
            #expect(await h.senderDevices("alice").isEmpty)
            let stats = await h.send("GET", "/internal/v1/stats", as: .apiKey)
            #expect(stats.json["counts"]?["devices"]?.int == 0)
            #expect(stats.json["lastSweepAt"]?.string != nil)
        }
    }

    @Test func statsHasTheContractShape() async throws {
        try await Harness.with { h in
            await h.register("d1", #""pushToken": "\#(token(1))""#)
            let stats = await h.send("GET", "/internal/v1/stats", as: .apiKey)
            #expect(stats.status == 200)
            for member in ["devices", "pushToStartTokens", "activityTokens", "tombstones"] {
                #expect(stats.json["counts"]?[member]?.int != nil, "counts.\(member)")
            }
            #expect(stats.json["counts"]?["devices"]?.int == 1)
            #expect((stats.json["mapSizeBytes"]?.int ?? 0) > 0)
            #expect((stats.json["usedBytes"]?.int ?? 0) > 0)
            #expect(stats.json["lastSweepAt"]?.isNull == true)
        }
    }

    @Test func healthzNeedsNoCredential() async throws {
        try await Harness.with { h in
            let reply = await h.send("GET", "/healthz", as: .none)
            #expect(reply.status == 200)
            #expect(reply.json["status"]?.string == "ok")
        }
    }

    @Test func metricsPassPromtool() async throws {
        try await Harness.with { h in
            await h.register("d1")
            await h.send("GET", "/nope")
            await h.send("POST", "/internal/v1/sweep", as: .apiKey)
            let reply = await h.send("GET", "/metrics", as: .apiKey)
            #expect(reply.status == 200)
            #expect(reply.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
            #expect(reply.text.contains(#"registry_http_requests_total{route="POST /v1/devices",status="201"} 1"#))
            #expect(reply.text.contains(#"registry_records{database="devices"} 1"#))
            #expect(await h.send("GET", "/metrics", as: .none).status == 401)
            let (status, output) = try runPromtool(reply.body)
            #expect(status == 0, "promtool: \(output)")
            #expect(output.isEmpty, "promtool: \(output)")
        }
    }

    /// `promtool check metrics` reads the exposition on stdin; tools/test installs it.
    private func runPromtool(_ text: [UInt8]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/promtool")
        process.arguments = ["check", "metrics"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        input.fileHandleForWriting.write(Data(text))
        try input.fileHandleForWriting.close()
        let result = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: result, as: UTF8.self))
    }
}
