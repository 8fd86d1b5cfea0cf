import APNsTestSupport
import Foundation
import JSON
import RegistryCore
import RegistryTestSupport
import Testing

/// Cancel means stop (docs/delivery.md): once `cancel` returns, no request
/// of the notification starts. A delivery in flight keeps an answer that
/// decided it; a retry, the other environment after `BadDeviceToken`, or a
/// resend with a renewed credential is not sent, the delivery is
/// `cancelled` and its token kept. Both engines (tools/test's PostgreSQL
/// pass runs DeliveryTests).
@Suite(.serialized) struct CancelTests {
    /// Accepts a notification to `user`, waits until its one delivery is in
    /// flight (the fake holds every answer for 3 s, so a test starved for a
    /// while on a busy machine still sees it there), cancels it, and
    /// returns the delivery once settled.
    static func cancelInFlight(_ h: SenderHarness, _ user: String, fcm: String? = nil) async throws -> DeliveryRecord {
        let accepted = try await h.notify(.user(user), payload: fcm == nil ? SenderHarness.apnsPayload : nil, fcm: fcm)
        let deadline = Date().addingTimeInterval(10)
        while try await h.store.notification(id: accepted.id)?.counts[.sending] != 1 {
            guard Date() < deadline else { throw TestFailure("the delivery was never claimed") }
            try await Task.sleep(for: .milliseconds(10))
        }
        let cancelled = try #require(try await h.store.cancel(notificationId: accepted.id))
        #expect(cancelled.counts[.sending] == 1, "cancelled while the request was in flight")
        let (_, deliveries) = try await h.settled(accepted.id)
        return try #require(deliveries.first)
    }

    @Test func aRetryAfterTheCancelIsNeverSent() async throws {
        let script = SenderTests.script([(1, #"[{"status": 429, "reason": "TooManyRequests", "delayMs": 3000}, {"status": 200}]"#)])
        try await withHarness(script: script) { h in
            _ = try await h.store.registerDevice(DeviceRegistration(userId: "ann", deviceId: "a", pushToken: .set(apnsToken(1))))
            try h.startSender()
            let delivery = try await Self.cancelInFlight(h, "ann")
            #expect(delivery.state == .cancelled && delivery.status == 429 && delivery.attempts == 1, "\(delivery)")
            // The 429 would have been retried about a second later.
            try await Task.sleep(for: .milliseconds(2_500))
            #expect(try await h.fake.log(count: 1).count == 1, "one request, no retry")
            #expect(try await h.store.devices(userId: "ann").first?.pushToken != nil, "the token is kept")
        }
    }

    @Test func theOtherEnvironmentAfterBadDeviceTokenIsNotTriedAfterTheCancel() async throws {
        let script = SenderTests.script([(2, #"[{"status": 400, "reason": "BadDeviceToken", "delayMs": 3000}]"#)])
        try await withHarness(script: script) { h in
            _ = try await h.store.registerDevice(DeviceRegistration(userId: "bo", deviceId: "b", pushToken: .set(apnsToken(2))))
            try h.startSender()
            let delivery = try await Self.cancelInFlight(h, "bo")
            #expect(delivery.state == .cancelled && delivery.status == 400 && delivery.reason == "BadDeviceToken", "\(delivery)")
            #expect(delivery.environment == .production && delivery.attempts == 1)
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await h.fake.log(count: 1).count == 1, "the sandbox was not tried")
            #expect(try await h.store.devices(userId: "bo").first?.pushToken != nil, "the token is kept")
            #expect(h.observer.removals.isEmpty)
        }
    }

    @Test func aResendWithARenewedAccessTokenIsNotMadeAfterTheCancel() async throws {
        let script = #"{"tokens": {"fcm-cy-1": [{"error": "UNAUTHENTICATED", "delayMs": 3000}, {"status": 200}]}}"#
        try await withFCMHarness(script: script) { h in
            _ = try await h.store.registerDevice(DeviceRegistration(userId: "cy", deviceId: "c", pushToken: .set("fcm-cy-1"), platform: .fcm))
            try h.startSender()
            let delivery = try await Self.cancelInFlight(h, "cy", fcm: #"{"data":{"score":"2-1"}}"#)
            #expect(delivery.state == .cancelled && delivery.status == 401 && delivery.attempts == 1, "\(delivery)")
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await h.fakeFCM!.log(count: 1, endpoint: "send").count == 1, "no resend")
        }
    }
}
