import APNs
import APNsTestSupport
import Foundation
import JSON
import RegistryCore
import RegistryTestSupport
import Testing

/// The sender against tools/fake-apns for the answers of APNs as Apple
/// documents them (docs/delivery.md "APNs' answers"): refused streams,
/// `ExpiredToken`, `BadEnvironmentKeyInToken` from the other environment,
/// and the provider-token problems that are retried.
@Suite(.serialized) struct APNsAsDocumentedTests {
    /// A stream the server refused, or one above a GOAWAY's last stream, was
    /// not processed (RFC 9113 §8.7): it is sent again at once, never
    /// `unknown`, and the refused requests do not count as attempts; one
    /// refused on every resend is retried later like a request never written.
    @Test func aRefusedStreamIsSentAgainAndNeverUnknown() async throws {
        try await withHarness(script: SenderTests.script([
            (1, #"[{"action": "refuse"}, {"status": 200}]"#),
            (2, #"[{"action": "goaway"}, {"status": 200}]"#),
            (3, #"[{"action": "refuse"}]"#),
        ])) { h in
            for n in 1...3 {
                try await h.store.registerDevice(DeviceRegistration(userId: "ivy", deviceId: "d\(n)", pushToken: .set(apnsToken(n))))
            }
            try h.startSender()
            let accepted = try await h.notify(.user("ivy"))
            let (_, deliveries) = try await h.settled(accepted.id, seconds: 20)
            let byDevice = Dictionary(uniqueKeysWithValues: deliveries.map { ($0.target.deviceId, $0) })
            #expect(byDevice["d1"]?.state == .delivered && byDevice["d1"]?.attempts == 1)
            #expect(byDevice["d2"]?.state == .delivered && byDevice["d2"]?.attempts == 1)
            // Refused on every request: 4 requests per claim (the first and 3 resends), 3 claims, then failed.
            #expect(byDevice["d3"]?.state == .failed && byDevice["d3"]?.attempts == 0, "\(String(describing: byDevice["d3"]))")
            // At most 12 reach the fake: a resend libcurl finds no open connection for is refused before it is written.
            let log = try await h.fake.log(count: 16)
            func requests(_ n: Int) -> Int { log.filter { $0["token"] == .string(apnsToken(n)) }.count }
            #expect(requests(1) == 2 && requests(2) == 2 && (3...12).contains(requests(3)), "\(requests(1)) \(requests(2)) \(requests(3))")
        }
    }

    @Test func expiredTokenRemovesTheTokenAsUnregisteredDoes() async throws {
        try await withHarness(script: SenderTests.script([
            (1, #"[{"status": 410, "reason": "ExpiredToken", "timestamp": "now"}]"#),
        ])) { h in
            try await h.store.registerDevice(DeviceRegistration(userId: "jay", deviceId: "a", pushToken: .set(apnsToken(1))))
            try h.startSender()
            let accepted = try await h.notify(.user("jay"))
            let (_, deliveries) = try await h.settled(accepted.id)
            #expect(deliveries.first?.state == .failed && deliveries.first?.status == 410 && deliveries.first?.reason == "ExpiredToken")
            #expect(try await h.store.devices(userId: "jay").first?.pushToken == nil)
            let history = try await h.store.history(userId: "jay", limit: 10)
            #expect(history.contains { $0.action == .removed && $0.reason == .feedback && $0.feedbackReason?.rawValue == "ExpiredToken" })
            #expect(h.observer.removals == ["ExpiredToken 1"])
        }
    }

    /// The sandbox refusing the key says nothing about the token: the
    /// delivery fails with production's `BadDeviceToken`, the token stays.
    @Test func badEnvironmentKeyInTokenFromTheOtherEnvironmentKeepsTheToken() async throws {
        try await withHarness(script: SenderTests.script([
            (1, #"{"production": [{"status": 400, "reason": "BadDeviceToken"}], "sandbox": [{"status": 403, "reason": "BadEnvironmentKeyInToken"}]}"#),
        ])) { h in
            try await h.store.registerDevice(DeviceRegistration(userId: "kim", deviceId: "a", pushToken: .set(apnsToken(1)),
                                                                environment: .production))
            try h.startSender()
            let accepted = try await h.notify(.user("kim"))
            let (_, deliveries) = try await h.settled(accepted.id)
            let delivery = try #require(deliveries.first)
            #expect(delivery.state == .failed && delivery.status == 400 && delivery.reason == "BadDeviceToken")
            #expect(delivery.environment == .production && delivery.attempts == 2)
            let device = try #require(try await h.store.devices(userId: "kim").first)
            #expect(device.pushToken?.environment == .production)
            #expect(h.observer.removals.isEmpty)
        }
    }

    /// Configuration problems that a later request may not meet: counted
    /// each time, retried with the usual backoff and the same provider
    /// token (nothing renewed), then failed with APNs' reason.
    @Test func tooManyProviderTokenUpdatesAndUnrelatedKeyIdAreRetriedAsConfigurationProblems() async throws {
        try await withHarness(script: SenderTests.script([
            (1, #"[{"status": 429, "reason": "TooManyProviderTokenUpdates"}]"#),
            (2, #"[{"status": 403, "reason": "UnrelatedKeyIdInToken"}]"#),
            (3, #"[{"status": 403, "reason": "UnrelatedKeyIdInToken"}, {"status": 200}]"#),
        ])) { h in
            for n in 1...3 {
                try await h.store.registerDevice(DeviceRegistration(userId: "lou", deviceId: "d\(n)", pushToken: .set(apnsToken(n))))
            }
            try h.startSender()
            let accepted = try await h.notify(.user("lou"))
            let (_, deliveries) = try await h.settled(accepted.id, seconds: 20)
            let byDevice = Dictionary(uniqueKeysWithValues: deliveries.map { ($0.target.deviceId, $0) })
            #expect(byDevice["d1"]?.state == .failed && byDevice["d1"]?.reason == "TooManyProviderTokenUpdates" && byDevice["d1"]?.attempts == 3)
            #expect(byDevice["d2"]?.state == .failed && byDevice["d2"]?.reason == "UnrelatedKeyIdInToken" && byDevice["d2"]?.attempts == 3)
            #expect(byDevice["d3"]?.state == .delivered && byDevice["d3"]?.attempts == 2)
            #expect(h.observer.problems.filter { $0 == "TooManyProviderTokenUpdates" }.count == 3)
            #expect(h.observer.problems.filter { $0 == "UnrelatedKeyIdInToken" }.count == 4)
            let log = try await h.fake.log(count: 8)
            #expect(Set(log.compactMap { $0["jwtIat"]?.exactInt64 }).count == 1)
        }
    }
}
