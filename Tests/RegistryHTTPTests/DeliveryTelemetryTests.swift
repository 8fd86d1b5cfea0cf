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
}
