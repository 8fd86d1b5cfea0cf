import APNs
import APNsTestSupport
import Foundation
import JSON
import RegistryCore
import RegistryTestSupport
import Testing

/// The sender against tools/fake-apns: every rule of docs/delivery.md
/// "States and rules" as APNs would exercise it.
@Suite(.serialized) struct SenderTests {
    static func script(_ tokens: [(Int, String)]) -> String {
        #"{"tokens": {"# + tokens.map { "\"\(apnsToken($0.0))\": \($0.1)" }.joined(separator: ", ") + "}}"
    }

    @Test func deliversToEveryDeviceWithTheHeadersOfTheNotification() async throws {
        try await withHarness { h in
            try await h.store.registerDevice(DeviceRegistration(userId: "alice", deviceId: "phone", pushToken: .set(apnsToken(1)), environment: .production))
            try await h.store.registerDevice(DeviceRegistration(userId: "alice", deviceId: "pad", pushToken: .set(apnsToken(2)), environment: .sandbox))
            try h.startSender()
            let accepted = try await h.notify(.user("alice"), collapseId: "match-42")
            let (notification, deliveries) = try await h.settled(accepted.id)
            #expect(notification.counts[.delivered] == 2)
            #expect(deliveries.allSatisfy { $0.state == .delivered && $0.status == 200 && $0.attempts == 1 })
            let log = try await h.fake.log(count: 2)
            #expect(log.count == 2)
            for record in log {
                let token = record["token"].flatMap { if case .string(let s) = $0 { s } else { nil } }
                let delivery = try #require(deliveries.first { $0.tokenFingerprint == HistoryEvent.fingerprint(of: token ?? "") })
                #expect(record["environment"] == .string(delivery.environment.rawValue))
                #expect(record["apnsId"] == .string(delivery.apnsId))
                #expect(record["topic"] == .string(FakeAPNs.topic))
                #expect(record["pushType"] == .string("alert"))
                #expect(record["collapseId"] == .string("match-42"))
                #expect(record["priority"]?.exactInt64 == 10)
                #expect(record["expiration"]?.exactInt64 == accepted.expiration.milliseconds / 1000)
            }
        }
    }

    @Test func unregisteredRemovesTheTokenAndBadDeviceTokenCorrectsTheEnvironment() async throws {
        try await withHarness(script: Self.script([
            (1, #"[{"status": 410, "reason": "Unregistered", "timestamp": "now"}]"#),
            (2, #"{"production": [{"status": 400, "reason": "BadDeviceToken"}]}"#),
            (3, #"[{"status": 400, "reason": "BadDeviceToken"}]"#),
        ])) { h in
            for n in 1...3 {
                try await h.store.registerDevice(DeviceRegistration(userId: "bob", deviceId: "d\(n)", pushToken: .set(apnsToken(n)),
                                                                    environment: .production))
            }
            try h.startSender()
            let accepted = try await h.notify(.user("bob"))
            let (_, deliveries) = try await h.settled(accepted.id)
            let byDevice = Dictionary(uniqueKeysWithValues: deliveries.map { ($0.target.deviceId, $0) })
            #expect(byDevice["d1"]?.state == .failed && byDevice["d1"]?.reason == "Unregistered")
            #expect(byDevice["d2"]?.state == .delivered && byDevice["d2"]?.environment == .sandbox && byDevice["d2"]?.attempts == 2)
            #expect(byDevice["d3"]?.state == .failed && byDevice["d3"]?.reason == "BadDeviceToken" && byDevice["d3"]?.attempts == 2)
            let devices = Dictionary(uniqueKeysWithValues: try await h.store.devices(userId: "bob").map { ($0.deviceId, $0) })
            #expect(devices["d1"]?.pushToken == nil)
            #expect(devices["d2"]?.pushToken?.environment == .sandbox)
            #expect(devices["d3"]?.pushToken == nil)
            let history = try await h.store.history(userId: "bob", limit: 10)
            #expect(history.contains { $0.action == .removed && $0.feedbackReason == .unregistered && $0.deviceId == "d1" })
            #expect(history.contains { $0.action == .environmentCorrected && $0.deviceId == "d2" })
            // Counted as the feedback route counts its removals (registry_feedback_removed_tokens_total).
            #expect(h.observer.removals.sorted() == ["BadDeviceToken 1", "Unregistered 1"])
        }
    }

    @Test func retriesAfterTooManyRequestsAndNeverResendsAnUncertainOne() async throws {
        try await withHarness(script: Self.script([
            (1, #"[{"status": 429, "reason": "TooManyRequests", "retryAfter": 1}, {"status": 200}]"#),
            (2, #"[{"action": "reset"}]"#),
            (3, #"[{"action": "stall"}]"#),
            (4, #"[{"status": 503, "reason": "ServiceUnavailable"}]"#),
        ])) { h in
            for n in 1...4 {
                try await h.store.registerDevice(DeviceRegistration(userId: "carol", deviceId: "d\(n)", pushToken: .set(apnsToken(n)),
                                                                    environment: .production))
            }
            try h.startSender(timeout: .seconds(1))
            let accepted = try await h.notify(.user("carol"))
            let (_, deliveries) = try await h.settled(accepted.id, seconds: 20)
            let byDevice = Dictionary(uniqueKeysWithValues: deliveries.map { ($0.target.deviceId, $0) })
            #expect(byDevice["d1"]?.state == .delivered && byDevice["d1"]?.attempts == 2)
            #expect(byDevice["d2"]?.state == .unknown && byDevice["d2"]?.attempts == 1)
            #expect(byDevice["d3"]?.state == .unknown && byDevice["d3"]?.attempts == 1)
            #expect(byDevice["d4"]?.state == .failed && byDevice["d4"]?.reason == "ServiceUnavailable" && byDevice["d4"]?.attempts == 3)
            let log = try await h.fake.log(count: 7)
            func requests(_ n: Int) -> Int { log.filter { $0["token"] == .string(apnsToken(n)) }.count }
            #expect(requests(1) == 2 && requests(2) == 1 && requests(3) == 1 && requests(4) == 3)
        }
    }

    /// The sandbox's `apns-unique-id` ends up on the delivery (production sends none).
    @Test func theSandboxsUniqueIdIsKeptOnTheDelivery() async throws {
        try await withHarness { h in
            _ = try await h.store.registerDevice(DeviceRegistration(userId: "ida", deviceId: "dev", pushToken: .set(apnsToken(31)),
                                                                    environment: .sandbox))
            _ = try await h.store.registerDevice(DeviceRegistration(userId: "ida", deviceId: "prod", pushToken: .set(apnsToken(32)),
                                                                    environment: .production))
            try h.startSender()
            let (_, deliveries) = try await h.settled(try await h.notify(.user("ida")).id)
            let byDevice = Dictionary(uniqueKeysWithValues: deliveries.map { ($0.target.deviceId, $0) })
            #expect(byDevice["dev"]?.state == .delivered && byDevice["dev"]?.apnsUniqueId?.isEmpty == false, "\(deliveries)")
            #expect(byDevice["prod"]?.state == .delivered && byDevice["prod"]?.apnsUniqueId == nil)
        }
    }

    /// An activity larger than a page: the sender reads the rest page by
    /// page and every holder gets exactly one request.
    @Test func anActivityLargerThanAPageReachesEveryHolderOnce() async throws {
        try await withHarness { h in
            for n in 1...7 { try await h.store.registerActivity("m9", "u\(n)", "d", token: 200 + n) }
            try h.startSender { $0.expansionPageSize = 2 }
            let accepted = try await h.notify(.activity("m9"), pushType: .liveactivity, pageSize: 2)
            #expect(accepted.expansion != nil && accepted.counts[.queued] == 2)
            let (notification, deliveries) = try await h.settled(accepted.id)
            #expect(notification.expansion == nil && notification.counts[.delivered] == 7, "\(notification.counts)")
            #expect(deliveries.map(\.index) == Array(0..<7))
            let log = try await h.fake.log(count: 7)
            #expect(Set(log.compactMap { $0["token"] }).count == 7 && log.count == 7)
        }
    }

    @Test func cancelledAndSignedOutDeliveriesAreNeverSent() async throws {
        try await withHarness { h in
            try await h.store.registerDevice(DeviceRegistration(userId: "dan", deviceId: "a", pushToken: .set(apnsToken(1))))
            try await h.store.registerDevice(DeviceRegistration(userId: "erin", deviceId: "b", pushToken: .set(apnsToken(2))))
            let cancelled = try await h.notify(.user("dan"))
            let removed = try await h.notify(.user("erin"))
            #expect(try await h.store.cancel(notificationId: cancelled.id)?.counts[.cancelled] == 1)
            try await h.store.signOut(userId: "erin", deviceId: "b", sequence: nil)
            try h.startSender()
            let (_, gone) = try await h.settled(removed.id)
            #expect(gone.first?.state == .failed && gone.first?.reason == DeliveryReason.tokenRemoved)
            // Reported after the claim commits, so possibly just after the store shows it.
            try await waitUntil(seconds: 5, "a failure decided at claim is reported") {
                h.observer.decided.contains(DeliveryReason.tokenRemoved)
            }
            let (_, kept) = try await h.settled(cancelled.id)
            #expect(kept.first?.state == .cancelled)
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await h.fake.log(count: 0).isEmpty)
        }
    }

    @Test func fcmTokensFailAtOnceAndAnExpiredNotificationIsNeverSent() async throws {
        try await withHarness { h in
            try await h.store.registerDevice(DeviceRegistration(userId: "gus", deviceId: "android", pushToken: .set("fcm-token-1"),
                                                                platform: .fcm))
            try await h.store.registerDevice(DeviceRegistration(userId: "gus", deviceId: "phone", pushToken: .set(apnsToken(1))))
            let mixed = try await h.notify(.user("gus"))
            #expect(mixed.counts[.failed] == 1 && mixed.counts[.queued] == 1, "\(mixed.counts)")
            let stale = try await h.notify(.user("gus"), expiration: h.fixture.clock.now().adding(seconds: -1))
            try h.startSender()
            let (_, deliveries) = try await h.settled(mixed.id)
            let byDevice = Dictionary(uniqueKeysWithValues: deliveries.map { ($0.target.deviceId, $0) })
            #expect(byDevice["android"]?.state == .failed && byDevice["android"]?.reason == DeliveryReason.platformNotConfigured)
            #expect(byDevice["android"]?.attempts == 0)
            #expect(byDevice["phone"]?.state == .delivered)
            let (expired, _) = try await h.settled(stale.id)
            #expect(expired.counts[.expired] == 1 && expired.counts[.failed] == 1)
            #expect(try await h.fake.log(count: 1).count == 1)
        }
    }

    @Test func expiredProviderTokenGetsOneMoreTryThatDoesNotCountAsARetry() async throws {
        try await withHarness(script: Self.script([(1, #"[{"status": 403, "reason": "ExpiredProviderToken"}, {"status": 200}]"#)])) { h in
            try await h.store.registerDevice(DeviceRegistration(userId: "hal", deviceId: "a", pushToken: .set(apnsToken(1))))
            try h.startSender()
            let accepted = try await h.notify(.user("hal"))
            let (_, deliveries) = try await h.settled(accepted.id)
            #expect(deliveries.first?.state == .delivered && deliveries.first?.attempts == 2)
            #expect(h.observer.requests == ["403 ExpiredProviderToken", "200"])
            #expect(h.observer.problems.isEmpty)
        }
    }

    @Test func aConfigurationErrorFailsTheDeliveryKeepsTheTokenAndIsReported() async throws {
        try await withHarness { h in
            try await h.store.registerDevice(DeviceRegistration(userId: "fay", deviceId: "a", pushToken: .set(apnsToken(1))))
            try h.startSender(topics: ["default": "com.example.other"])
            let accepted = try await h.notify(.user("fay"))
            let (_, deliveries) = try await h.settled(accepted.id)
            #expect(deliveries.first?.state == .failed && deliveries.first?.reason == "TopicDisallowed")
            #expect(h.observer.problems == ["TopicDisallowed"])
            #expect(try await h.store.devices(userId: "fay").first?.pushToken != nil)
        }
    }

    @Test func activityFanOutUsesTheLiveActivityTopicAndStopMarksStalledOnesUnknown() async throws {
        try await withHarness(script: Self.script([(7, #"[{"action": "stall"}]"#)])) { h in
            for n in 1...8 {
                try await h.store.registerDevice(DeviceRegistration(userId: "u\(n)", deviceId: "d", pushToken: .set(apnsToken(100 + n))))
                try await h.store.registerActivity("match-1", "u\(n)", "d", token: n)
            }
            try h.startSender(timeout: .seconds(30)) { $0.stopGrace = .milliseconds(300) }
            let accepted = try await h.notify(.activity("match-1"), pushType: .liveactivity)
            try await Task.sleep(for: .milliseconds(1500))
            await h.stopSender()
            let (notification, deliveries) = try await h.settled(accepted.id, seconds: 1)
            #expect(notification.counts[.delivered] == 7 && notification.counts[.unknown] == 1)
            #expect(deliveries.first { $0.state == .unknown }?.target.userId == "u7")
            let log = try await h.fake.log(count: 8)
            #expect(log.allSatisfy { $0["topic"] == .string(FakeAPNs.topic + ".push-type.liveactivity") && $0["pushType"] == .string("liveactivity") })
            let connections = Set(log.compactMap { $0["connection"]?.exactInt64 })
            #expect(connections.count == 1)
        }
    }
}

/// Runs `body` with a harness, and always stops it (the fake is a child process).
func withHarness(script: String = #"{"tokens": {}}"#, _ body: (SenderHarness) async throws -> Void) async throws {
    try await stopping(try await SenderHarness(script: script), body)
}
