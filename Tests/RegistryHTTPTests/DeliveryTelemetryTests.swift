import RegistryCore
import Testing
@testable import RegistryHTTP

/// The sender's observations land in the metrics an operator already reads.
@Suite struct DeliveryTelemetryTests {
    /// Tokens APNs' answers removed count in `registry_feedback_removed_tokens_total`,
    /// beside the feedback route's removals, by reason.
    @Test func tokensRemovedOnAnswersCountAsFeedbackRemovals() {
        let metrics = RegistryMetrics()
        let telemetry = DeliveryTelemetry(metrics: metrics, logger: Logger(minimumLevel: .error, sink: { _ in }))
        metrics.recordFeedback(reason: .unregistered, removed: 1)
        telemetry.tokensRemoved(2, reason: .unregistered)
        telemetry.tokensRemoved(1, reason: .badDeviceToken)
        telemetry.tokensRemoved(0, reason: .deviceTokenNotForTopic)
        let text = metrics.render(stats: nil)
        #expect(text.contains(#"registry_feedback_removed_tokens_total{reason="Unregistered"} 3"#))
        #expect(text.contains(#"registry_feedback_removed_tokens_total{reason="BadDeviceToken"} 1"#))
        #expect(text.contains(#"registry_feedback_removed_tokens_total{reason="DeviceTokenNotForTopic"} 0"#))
    }

    /// A delivery the claim decided without sending (its holder signed out,
    /// its token changed platform, its notification expired) is logged as
    /// a settled one is, and counted by provider and state.
    @Test func aFailureDecidedAtClaimIsLoggedAndCounted() {
        let metrics = RegistryMetrics()
        let lines = LogCapture()
        let telemetry = DeliveryTelemetry(metrics: metrics, logger: Logger(minimumLevel: .info, sink: { lines.append($0) }))
        let target = DeliveryTarget(userId: "alice", appId: "default", deviceId: "pixel", kind: .push, activityId: nil)
        var delivery = DeliveryRecord(notificationId: "n1", index: 3, target: target, tokenFingerprint: "0123456789ab", platform: .fcm,
                                      environment: .production, state: .failed, apnsId: "", status: nil,
                                      reason: DeliveryReason.tokenChanged, attempts: 0, retries: 0,
                                      updatedAt: Timestamp(milliseconds: 0), notBefore: Timestamp(milliseconds: 0), claimedAt: nil)
        telemetry.decidedAtClaim(delivery)
        delivery.state = .expired
        delivery.reason = nil
        telemetry.decidedAtClaim(delivery)
        delivery.state = .cancelled
        telemetry.decidedAtClaim(delivery)
        let text = metrics.render(stats: nil)
        #expect(text.contains(#"registry_deliveries_settled_total{provider="fcm",state="failed"} 1"#), "\(text)")
        #expect(text.contains(#"registry_deliveries_settled_total{provider="fcm",state="expired"} 1"#))
        #expect(text.contains(#"registry_deliveries_settled_total{provider="fcm",state="cancelled"} 1"#))
        let logged = lines.all.split(separator: "\n").map(String.init)
        #expect(logged.count == 2, "failures and expiries are logged, a cancel is not: \(logged)")
        #expect(logged.first?.contains(#""event":"delivery_failed""#) == true && logged.first?.contains(#""reason":"token_changed""#) == true,
                "\(logged)")
        #expect(logged.first?.contains(#""tokenFingerprint":"0123456789ab""#) == true)
        #expect(logged.last?.contains(#""event":"delivery_expired""#) == true)
    }
}
