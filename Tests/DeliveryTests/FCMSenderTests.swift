import APNsTestSupport
import Foundation
import JSON
import RegistryCore
import RegistryTestSupport
import Testing

/// The sender with both providers, against tools/fake-apns and
/// tools/fake-fcm: each token goes to its own provider with its own body,
/// and every row of FCM's answers table does what docs/delivery.md says to
/// the delivery and to the token (on the test backend: LMDB, or PostgreSQL
/// with REGISTRY_TEST_BACKEND).
@Suite(.serialized, .enabled(if: FakeFCM.available, "tools/fake-fcm needs /usr/bin/python3 with h2 and cryptography"))
struct FCMSenderTests {
    static let fcmBody = #"{"notification":{"title":"Goal!"},"data":{"match":"42"}}"#

    static func script(_ tokens: [(String, String)], tokenEndpoint: String? = nil) -> String {
        var members = [#""tokens": {"# + tokens.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ") + "}"]
        if let tokenEndpoint { members.append(#""token_endpoint": "# + tokenEndpoint) }
        return "{" + members.joined(separator: ", ") + "}"
    }

    static func string(_ value: JSONValue?) -> String? {
        if case .string(let s)? = value { s } else { nil }
    }

    @Test func aMixedUserGetsEachTokenOnceThroughItsOwnProviderWithItsOwnBody() async throws {
        try await withFCMHarness(script: #"{"tokens": {}}"#) { h in
            _ = try await h.store.registerDevice(DeviceRegistration(userId: "mia", deviceId: "pixel", pushToken: .set("fcm-mia-1"), platform: .fcm))
            _ = try await h.store.registerDevice(DeviceRegistration(userId: "mia", deviceId: "phone", pushToken: .set(apnsToken(1))))
            try h.startSender()
            let accepted = try await h.notify(.user("mia"), fcm: Self.fcmBody)
            #expect(accepted.counts[.queued] == 2)
            let (notification, deliveries) = try await h.settled(accepted.id)
            #expect(notification.counts[.delivered] == 2, "\(deliveries)")
            let byDevice = Dictionary(uniqueKeysWithValues: deliveries.map { ($0.target.deviceId, $0) })
            let android = try #require(byDevice["pixel"])
            #expect(android.platform == .fcm && android.attempts == 1 && android.status == 200)
            #expect(android.messageId?.hasPrefix("projects/\(FakeFCM.projectId)/messages/") == true)
            #expect(byDevice["phone"]?.platform == .apns && byDevice["phone"]?.messageId == byDevice["phone"]?.apnsId)

            let sends = try await h.fakeFCM!.log(count: 1, endpoint: "send")
            #expect(sends.count == 1)
            #expect(Self.string(sends.first?["token"]) == "fcm-mia-1")
            guard case .object(let message)? = sends.first?["message"], case .object(let data)? = message["data"],
                  case .object(let androidMembers)? = message["android"] else {
                Issue.record("the message lacks data or android: \(sends)")
                return
            }
            #expect(data["match"] == .string("42"))
            #expect(Self.string(androidMembers["ttl"])?.hasSuffix("s") == true)
            let apns = try await h.fake.log(count: 1)
            #expect(apns.count == 1 && Self.string(apns.first?["token"]) == apnsToken(1))
        }
    }

    @Test func aTokenWithoutItsPlatformsBodyOrProviderFailsAtAcceptAndIsNeverSent() async throws {
        try await withFCMHarness(script: #"{"tokens": {}}"#) { h in
            _ = try await h.store.registerDevice(DeviceRegistration(userId: "ned", deviceId: "pixel", pushToken: .set("fcm-ned-1"), platform: .fcm))
            _ = try await h.store.registerDevice(DeviceRegistration(userId: "ned", deviceId: "phone", pushToken: .set(apnsToken(2))))
            try h.startSender(fcmApps: ["default"])
            let apnsOnly = try await h.notify(.user("ned"))
            let fcmOnly = try await h.notify(.user("ned"), payload: nil, fcm: Self.fcmBody)
            for (accepted, failedDevice) in [(apnsOnly, "pixel"), (fcmOnly, "phone")] {
                #expect(accepted.counts[.failed] == 1 && accepted.counts[.queued] == 1)
                let (_, deliveries) = try await h.settled(accepted.id)
                let failed = try #require(deliveries.first { $0.target.deviceId == failedDevice })
                #expect(failed.state == .failed && failed.reason == DeliveryReason.noPayloadForPlatform && failed.attempts == 0)
            }
            await h.stopSender()
            // A sender whose FCM provider holds no account for the app: Android tokens are not configured.
            try h.startSender(fcmApps: ["other"])
            let unconfigured = try await h.notify(.user("ned"), fcm: Self.fcmBody)
            let (_, deliveries) = try await h.settled(unconfigured.id)
            let android = try #require(deliveries.first { $0.target.deviceId == "pixel" })
            #expect(android.state == .failed && android.reason == DeliveryReason.platformNotConfigured)
            #expect(try await h.fakeFCM!.log(count: 2, endpoint: "send").count == 1, "only fcmOnly's Android token was sent")
        }
    }

    @Test func fcmAnswersRemoveOrKeepTheTokenAsTheTableSays() async throws {
        let rows: [(String, String, DeliveryState, String?, Bool)] = [
            // token, answers, state, reason, token kept
            ("fcm-gone", #"[{"error": "UNREGISTERED"}]"#, .failed, "Unregistered", false),
            ("fcm-bad", #"[{"error": "INVALID_TOKEN"}]"#, .failed, "InvalidToken", false),
            ("fcm-arg", #"[{"error": "INVALID_ARGUMENT"}]"#, .failed, nil, true),
            ("fcm-sender", #"[{"error": "SENDER_ID_MISMATCH"}]"#, .failed, "SENDER_ID_MISMATCH", true),
            ("fcm-denied", #"[{"error": "PERMISSION_DENIED"}]"#, .failed, "PERMISSION_DENIED", true),
            ("fcm-third", #"[{"error": "THIRD_PARTY_AUTH_ERROR"}]"#, .failed, "THIRD_PARTY_AUTH_ERROR", true),
            ("fcm-404", #"[{"status": 404}]"#, .failed, nil, true),
            ("fcm-413", #"[{"status": 413}]"#, .failed, nil, true),
            ("fcm-flaky", #"[{"error": "UNAVAILABLE"}, {"status": 200}]"#, .delivered, nil, true),
            ("fcm-stall", #"[{"action": "stall"}]"#, .unknown, nil, true),
        ]
        try await withFCMHarness(script: Self.script(rows.map { ($0.0, $0.1) })) { h in
            for (n, row) in rows.enumerated() {
                _ = try await h.store.registerDevice(DeviceRegistration(userId: "row\(n)", deviceId: "pixel", pushToken: .set(row.0), platform: .fcm))
            }
            try h.startSender(timeout: .seconds(2))
            let accepted = try await h.notify(.users(rows.indices.map { "row\($0)" }), payload: nil, fcm: Self.fcmBody)
            let (_, deliveries) = try await h.settled(accepted.id, seconds: 20)
            for (n, row) in rows.enumerated() {
                let delivery = try #require(deliveries.first { $0.target.userId == "row\(n)" })
                #expect(delivery.state == row.2, "\(row.0): \(delivery)")
                if let reason = row.3 { #expect(delivery.reason == reason, "\(row.0): \(delivery)") }
                let kept = try await h.store.devices(userId: "row\(n)").first?.pushToken != nil
                #expect(kept == row.4, "\(row.0): token kept \(kept)")
            }
            let flaky = try #require(deliveries.first { $0.target.userId == "row8" })
            #expect(flaky.attempts == 2 && flaky.retries == 1)
            #expect(Set(h.observer.problems) == ["SENDER_ID_MISMATCH", "PERMISSION_DENIED", "THIRD_PARTY_AUTH_ERROR"])
            // The removals are written as the feedback route would: history names the reason.
            let events = try await h.store.history(userId: "row1", limit: 10)
            #expect(events.contains { $0.action == .removed && $0.feedbackReason == .invalidToken })
        }
    }

    @Test func quotaExceededWaitsAMinuteWithoutRetryAfterAndHonoursOne() async throws {
        try await withFCMHarness(script: Self.script([
            ("fcm-quota", #"[{"error": "QUOTA_EXCEEDED"}]"#), ("fcm-quota-5", #"[{"error": "QUOTA_EXCEEDED", "retryAfter": 5}]"#),
        ])) { h in
            _ = try await h.store.registerDevice(DeviceRegistration(userId: "q1", deviceId: "pixel", pushToken: .set("fcm-quota"), platform: .fcm))
            _ = try await h.store.registerDevice(DeviceRegistration(userId: "q2", deviceId: "pixel", pushToken: .set("fcm-quota-5"), platform: .fcm))
            try h.startSender()
            let sentAt = h.fixture.clock.now()
            let accepted = try await h.notify(.users(["q1", "q2"]), payload: nil, fcm: Self.fcmBody)
            _ = try await h.fakeFCM!.log(count: 2, endpoint: "send")
            var deliveries: [DeliveryRecord] = []
            for _ in 0..<100 {
                deliveries = try await h.store.deliveries(notificationId: accepted.id, from: 0, limit: 10)
                if deliveries.allSatisfy({ $0.retries == 1 }) { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            let byUser = Dictionary(uniqueKeysWithValues: deliveries.map { ($0.target.userId, $0) })
            #expect(byUser["q1"]?.state == .queued && byUser["q1"]?.reason == "QUOTA_EXCEEDED")
            #expect(byUser["q1"].map { $0.notBefore.milliseconds - sentAt.milliseconds >= 60_000 } == true, "\(deliveries)")
            // Retry-After 5 s is honoured: later than the first backoff (about 1 s), well before a minute.
            let wait = byUser["q2"].map { $0.notBefore.milliseconds - sentAt.milliseconds } ?? 0
            #expect(wait >= 5_000 && wait < 60_000, "\(wait) ms")
        }
    }

    @Test func aRefusedAccessTokenIsRenewedOnceAndTheRequestSentAgain() async throws {
        try await withFCMHarness(script: Self.script([
            ("fcm-renew", #"[{"action": "revoke_bearer"}, {"status": 200}]"#),
            ("fcm-twice", #"[{"error": "UNAUTHENTICATED"}]"#),
        ])) { h in
            _ = try await h.store.registerDevice(DeviceRegistration(userId: "r1", deviceId: "pixel", pushToken: .set("fcm-renew"), platform: .fcm))
            try h.startSender()
            let first = try await h.notify(.user("r1"), payload: nil, fcm: Self.fcmBody)
            let (_, renewed) = try await h.settled(first.id)
            #expect(renewed.first?.state == .delivered && renewed.first?.attempts == 2 && renewed.first?.retries == 0)
            #expect(try await h.fakeFCM!.log(count: 2, endpoint: "token").count == 2, "one renewal")

            _ = try await h.store.registerDevice(DeviceRegistration(userId: "r2", deviceId: "pixel", pushToken: .set("fcm-twice"), platform: .fcm))
            let second = try await h.notify(.user("r2"), payload: nil, fcm: Self.fcmBody)
            let (_, refused) = try await h.settled(second.id)
            #expect(refused.first?.state == .failed && refused.first?.reason == "UNAUTHENTICATED" && refused.first?.attempts == 2)
            #expect(h.observer.problems.contains("UNAUTHENTICATED"))
            #expect(try await h.store.devices(userId: "r2").first?.pushToken != nil)
        }
    }

    @Test func aRefusedGrantFailsTheDeliveriesAsFcmAuthFailedAndKeepsEveryToken() async throws {
        try await withFCMHarness(script: Self.script([], tokenEndpoint: #"[{"status": 400, "error": "invalid_grant"}]"#)) { h in
            for n in 1...3 {
                _ = try await h.store.registerDevice(DeviceRegistration(userId: "g\(n)", deviceId: "pixel", pushToken: .set("fcm-g\(n)"), platform: .fcm))
            }
            try h.startSender()
            let accepted = try await h.notify(.users(["g1", "g2", "g3"]), payload: nil, fcm: Self.fcmBody)
            let (notification, deliveries) = try await h.settled(accepted.id)
            #expect(notification.counts[.failed] == 3)
            #expect(deliveries.allSatisfy { $0.reason == "fcm_auth_failed" && $0.attempts == 0 })
            for n in 1...3 { #expect(try await h.store.devices(userId: "g\(n)").first?.pushToken != nil) }
            #expect(h.observer.problems.filter { $0 == "fcm_auth_failed" }.count == 3)
            #expect(try await h.fakeFCM!.log(count: 10, endpoint: "send").isEmpty)
        }
    }
}

/// Runs `body` with a harness holding a fake FCM scripted with `script`, and always stops it.
func withFCMHarness(script: String, _ body: (SenderHarness) async throws -> Void) async throws {
    try await stopping(try await SenderHarness(fcmScript: script), body)
}
