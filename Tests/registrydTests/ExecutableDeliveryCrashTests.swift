import APNsTestSupport
import Foundation
import Glibc
import RegistrydTestSupport
import Testing

/// At most once across a crash: a `kill -9` in the middle of a fan-out (10,000
/// APNs tokens, 1,000 FCM tokens), then a restart on the same data directory.
/// Every delivery ends `delivered` or `unknown` (the restarted LMDB server
/// marks what it finds `sending` unknown at once, and sends what was still
/// `queued`), and the fake accepted no token twice.
@Suite(.serialized, .enabled(if: FakeAPNs.available, DeliveryServing.skipReason))
struct ExecutableDeliveryCrashTests {
    static let tokens = 10_000

    @Test func aKillDuringAFanOutDeliversNothingTwice() async throws {
        try await DeliveryServing.withFake { fake in
            let directory = try Registryd.makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let started = ContinuousClock.now
            try await DeliveryServing.importActivityTokens(Self.tokens, activity: "m1", in: directory)
            let imported = ContinuousClock.now

            let first = try await RegistrydServer(arguments: DeliveryServing.flags(fake), directory: directory)
            defer { if first.process.isRunning { _ = first.stop() } }
            try #require(first.port > 0, "\(first.log)")
            let key = try DeliveryServing.apiKey(in: directory)
            let body = #"{"target": {"activityId": "m1"}, "payload": {"aps": {"event": "update", "content-state": {"score": "2-1"}}}}"#
            let posted = ContinuousClock.now
            let (status, text) = try await Registryd.request("POST", first.port, "/internal/v1/notifications", bearer: key, body: body)
            let acceptance = ContinuousClock.now - posted
            try #require(status == 202, "\(text)")
            let id = try #require((DeliveryServing.object(text)["notification"] as? [String: Any])?["id"] as? String)
            // The first page is stored with the notification; the sender reads the rest of the activity.
            let view = try #require(DeliveryServing.object(text)["notification"] as? [String: Any])
            #expect(view["resolving"] as? Bool == true)
            #expect(DeliveryServing.counts(DeliveryServing.object(text))["queued"] == 250)

            // Mid-flight: some hundreds answered, most still to send.
            let deadline = Date().addingTimeInterval(30)
            var seenBeforeKill = 0
            while seenBeforeKill < 300, Date() < deadline {
                try await Task.sleep(for: .milliseconds(10))
                seenBeforeKill = Self.lines(fake.logFile)
            }
            kill(first.process.processIdentifier, SIGKILL)
            let process = first.process
            await offThePool { process.waitUntilExit() }
            #expect(process.terminationReason == .uncaughtSignal)
            try #require(seenBeforeKill >= 300 && seenBeforeKill < Self.tokens,
                         "the kill came mid-fan-out (\(seenBeforeKill) requests seen)")

            let second = try await RegistrydServer(arguments: DeliveryServing.flags(fake), directory: directory)
            defer { if second.process.isRunning { _ = second.stop() } }
            try #require(second.port > 0, "\(second.log)")
            let counts = try await DeliveryServing.settled(id, port: second.port, key: key, seconds: 60)
            let settled = ContinuousClock.now
            let delivered = counts["delivered"] ?? 0, unknown = counts["unknown"] ?? 0
            #expect(delivered + unknown == Self.tokens, "\(counts)")
            for state in ["queued", "sending", "failed", "expired", "cancelled"] { #expect(counts[state] == 0, "\(state): \(counts)") }

            let deliveries = try await DeliveryServing.deliveries(id, port: second.port, key: key)
            #expect(deliveries.count == Self.tokens)
            // The restart found the dead process's claims and turned them unknown: counted and logged once.
            let abandoned = try await DeliveryServing.metric("registry_deliveries_abandoned_total",
                                                             port: second.port, key: key)
            #expect(abandoned > 0 && Int(abandoned) <= unknown, "\(abandoned) abandoned of \(unknown) unknown")
            #expect(second.stop() == 0)
            #expect(second.log.contains("\"event\":\"deliveries_abandoned\""))

            // The fake flushes its log every 50 ms; the server is stopped, nothing more comes.
            try await Task.sleep(for: .milliseconds(200))
            var accepted: [String: Int] = [:]
            for request in DeliveryServing.log(fake) where request["status"] as? Int == 200 {
                accepted[request["token"] as? String ?? "", default: 0] += 1
            }
            let twice = accepted.filter { $0.value > 1 }
            #expect(twice.isEmpty, "\(twice.count) tokens accepted more than once, e.g. \(twice.first.map { "\($0)" } ?? "")")
            var deliveredUnseen = 0
            for delivery in deliveries where delivery["state"] as? String == "delivered" {
                let user = delivery["userId"] as? String ?? ""
                let index = Int(user.dropFirst()) ?? -1
                if accepted[DeliveryServing.token(index)] == nil { deliveredUnseen += 1 }
            }
            #expect(deliveredUnseen == 0, "delivered without an accepted request at the fake")
            // What the issue asks to know: how long the 202 took, and how the crash went.
            print("""
                delivery crash test: \(Self.tokens) tokens imported in \(imported - started); 202 after \(acceptance); \
                \(seenBeforeKill) requests seen before kill -9; after restart \(delivered) delivered, \(unknown) unknown, \
                settled \(settled - posted) after the POST; \(accepted.count) tokens accepted by the fake
                """)
        }
    }

    /// 1,000 Android users, one FCM token each, one notification to all of
    /// them (`userIds`). The fake answers token i after 3·i ms, so answers
    /// trickle in over 3 s while every request is already in flight: the
    /// kill, once 100 are delivered, lands with most of them claimed and
    /// `sending`. (The fake logs a request when it arrives, so its log
    /// counts requests sent, not answers.)
    @Test func aKillDuringAnFCMFanOutDeliversNothingTwice() async throws {
        let count = 1_000
        let delays = (0..<count).map { #""\#(DeliveryServing.fcmToken($0))": [{"status": 200, "delayMs": \#($0 * 3)}]"# }
        try await DeliveryServing.withFakeFCM(script: #"{"tokens": {\#(delays.joined(separator: ", "))}}"#) { fake in
            let directory = try Registryd.makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try await DeliveryServing.importFCMTokens(count, in: directory)

            let first = try await RegistrydServer(arguments: DeliveryServing.flags(fake), directory: directory)
            defer { if first.process.isRunning { _ = first.stop() } }
            try #require(first.port > 0, "\(first.log)")
            let key = try DeliveryServing.apiKey(in: directory)
            let users = (0..<count).map { #""u\#($0)""# }.joined(separator: ",")
            let body = #"{"target": {"userIds": [\#(users)]}, "fcm": {"data": {"score": "2-1"}}}"#
            let (status, text) = try await Registryd.request("POST", first.port, "/internal/v1/notifications", bearer: key, body: body)
            try #require(status == 202, "\(text)")
            let id = try #require((DeliveryServing.object(text)["notification"] as? [String: Any])?["id"] as? String)
            #expect(DeliveryServing.counts(DeliveryServing.object(text))["queued"] == count)

            let deadline = Date().addingTimeInterval(30)
            var deliveredBeforeKill = 0
            while deliveredBeforeKill < 100, Date() < deadline {
                try await Task.sleep(for: .milliseconds(10))
                let (_, view) = try await Registryd.request("GET", first.port, "/internal/v1/notifications/\(id)?limit=1", bearer: key)
                deliveredBeforeKill = DeliveryServing.counts(DeliveryServing.object(view))["delivered"] ?? 0
            }
            kill(first.process.processIdentifier, SIGKILL)
            let process = first.process
            await offThePool { process.waitUntilExit() }
            #expect(process.terminationReason == .uncaughtSignal)
            try #require(deliveredBeforeKill >= 100 && deliveredBeforeKill < count,
                         "the kill came mid-fan-out (\(deliveredBeforeKill) delivered)")

            let second = try await RegistrydServer(arguments: DeliveryServing.flags(fake), directory: directory)
            defer { if second.process.isRunning { _ = second.stop() } }
            try #require(second.port > 0, "\(second.log)")
            let counts = try await DeliveryServing.settled(id, port: second.port, key: key, seconds: 60)
            let delivered = counts["delivered"] ?? 0, unknown = counts["unknown"] ?? 0
            #expect(delivered + unknown == count, "\(counts)")
            #expect(delivered >= 1 && unknown >= 1, "the kill split the fan-out: \(counts)")
            let deliveries = try await DeliveryServing.deliveries(id, port: second.port, key: key)
            #expect(deliveries.allSatisfy { $0["platform"] as? String == "fcm" })
            #expect(second.stop() == 0)

            // The fake flushes its log every 50 ms; the server is stopped, nothing more comes.
            try await Task.sleep(for: .milliseconds(200))
            var accepted: [String: Int] = [:]
            for request in DeliveryServing.sends(fake) where request["status"] as? Int == 200 {
                accepted[request["token"] as? String ?? "", default: 0] += 1
            }
            let twice = accepted.filter { $0.value > 1 }
            #expect(twice.isEmpty, "\(twice.count) tokens accepted more than once")
            var deliveredUnseen = 0
            for delivery in deliveries where delivery["state"] as? String == "delivered" {
                let index = Int((delivery["userId"] as? String ?? "").dropFirst()) ?? -1
                if accepted[DeliveryServing.fcmToken(index)] == nil { deliveredUnseen += 1 }
            }
            #expect(deliveredUnseen == 0, "delivered without an accepted request at the fake")
            print("FCM delivery crash test: \(deliveredBeforeKill) delivered before kill -9; after restart \(delivered) delivered, "
                  + "\(unknown) unknown; \(accepted.count) tokens accepted by the fake")
        }
    }

    /// How many lines the fake's log holds (counted, not parsed: polled often).
    static func lines(_ path: String) -> Int {
        guard let data = FileManager.default.contents(atPath: path) else { return 0 }
        return data.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
    }
}
