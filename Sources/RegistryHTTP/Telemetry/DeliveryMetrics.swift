import RegistryCore
import Synchronization

/// The delivery half of `/metrics`: requests to APNs by status and reason,
/// their latency, deliveries by state, the queue's depth and the age of its
/// oldest due delivery, provider-token renewals, configuration errors.
///
/// Reasons are APNs' documented set; any other text an answer carries is
/// counted as `other`, so no answer can create series.
public final class DeliveryMetrics: Sendable {
    private struct State {
        var requests: [RequestKey: UInt64] = [:]
        var latency = Histogram(bounds: Histogram.latencySeconds)
        var settled: [String: UInt64] = [:]
        var accepted: UInt64 = 0
        var acceptedDeliveries: UInt64 = 0
        var renewals: UInt64 = 0
        var configurationErrors: [String: UInt64] = [:]
        var queue: DeliveryQueueStats?
        var oldestAgeSeconds: Double = 0
    }

    private struct RequestKey: Hashable, Comparable {
        var status: String
        var reason: String

        static func < (a: RequestKey, b: RequestKey) -> Bool { (a.status, a.reason) < (b.status, b.reason) }
    }

    /// APNs' reasons (Apple's "Handling notification responses from APNs").
    static let knownReasons: Set<String> = [
        "BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic",
        "DeviceTokenNotForTopic", "DuplicateHeaders", "IdleTimeout", "InvalidPushType", "MissingDeviceToken",
        "MissingTopic", "PayloadEmpty", "TopicDisallowed", "BadCertificate", "BadCertificateEnvironment",
        "ExpiredProviderToken", "Forbidden", "InvalidProviderToken", "MissingProviderToken", "UnrelatedKeyIdInToken",
        "BadEnvironmentKeyInToken", "BadPath", "MethodNotAllowed", "ExpiredToken", "Unregistered", "PayloadTooLarge",
        "TooManyProviderTokenUpdates", "TooManyRequests", "InternalServerError", "ServiceUnavailable", "Shutdown",
    ]

    private let state = Mutex(State())

    public init() {}

    private static func bounded(_ reason: String?) -> String {
        guard let reason else { return "" }
        return knownReasons.contains(reason) ? reason : "other"
    }

    func recordAPNsRequest(status: Int?, reason: String?, outcome: String, seconds: Double) {
        let key = RequestKey(status: status.map(String.init) ?? outcome, reason: Self.bounded(reason))
        state.withLock { s in
            s.requests[key, default: 0] += 1
            if status != nil { s.latency.observe(seconds) }
        }
    }

    func recordSettled(_ deliveryState: DeliveryState, count: Int = 1) {
        state.withLock { s in s.settled[deliveryState.rawValue, default: 0] += UInt64(count) }
    }

    func recordRenewal() {
        state.withLock { s in s.renewals += 1 }
    }

    func recordConfigurationError(reason: String) {
        state.withLock { s in s.configurationErrors[Self.bounded(reason), default: 0] += 1 }
    }

    func recordQueue(_ stats: DeliveryQueueStats, now: Timestamp) {
        state.withLock { s in
            s.queue = stats
            s.oldestAgeSeconds = stats.oldestDue.map { max(0, Double(now.milliseconds - $0.milliseconds) / 1000) } ?? 0
        }
    }

    func recordAccepted(deliveries: Int) {
        state.withLock { s in
            s.accepted += 1
            s.acceptedDeliveries += UInt64(deliveries)
        }
    }

    func render(into out: inout String) {
        let s = state.withLock { $0 }
        PrometheusText.family("registry_notifications_accepted_total", type: "counter", help: "Notifications accepted (202).",
                              samples: [("", Double(s.accepted))], into: &out)
        PrometheusText.family("registry_deliveries_created_total", type: "counter",
                              help: "Deliveries created by accepted notifications (one per token).",
                              samples: [("", Double(s.acceptedDeliveries))], into: &out)
        PrometheusText.header("registry_apns_requests_total", type: "counter",
                              help: "Requests to APNs by HTTP status (or not_sent, uncertain) and APNs reason.", into: &out)
        for (key, n) in s.requests.sorted(by: { $0.key < $1.key }) {
            out += "registry_apns_requests_total{status=\"\(key.status)\",reason=\"\(key.reason)\"} \(n)\n"
        }
        PrometheusText.header("registry_apns_request_duration_seconds", type: "histogram",
                              help: "Time from sending a request to APNs to its answer.", into: &out)
        s.latency.render(name: "registry_apns_request_duration_seconds", labels: "", into: &out)
        PrometheusText.family("registry_deliveries_settled_total", type: "counter",
                              help: "Deliveries that reached a state after being sent (queued: a retry).", label: "state",
                              samples: DeliveryState.allCases.filter { $0 != .sending }
                                  .map { ($0.rawValue, Double(s.settled[$0.rawValue, default: 0])) }, into: &out)
        PrometheusText.family("registry_delivery_queue", type: "gauge",
                              help: "Deliveries waiting (queued) and in flight (sending).", label: "state",
                              samples: [("queued", Double(s.queue?.queued ?? 0)), ("sending", Double(s.queue?.sending ?? 0))],
                              into: &out)
        PrometheusText.family("registry_delivery_oldest_queued_age_seconds", type: "gauge",
                              help: "How long the oldest due queued delivery has waited (0: none).",
                              samples: [("", s.oldestAgeSeconds)], into: &out)
        PrometheusText.family("registry_apns_provider_token_renewals_total", type: "counter",
                              help: "Provider tokens (ES256 JWTs) signed.", samples: [("", Double(s.renewals))], into: &out)
        PrometheusText.header("registry_apns_configuration_errors_total", type: "counter",
                              help: "APNs answers that blame the sender's configuration (key, team, topic), by reason.", into: &out)
        for (reason, n) in s.configurationErrors.sorted(by: { $0.key < $1.key }) {
            out += "registry_apns_configuration_errors_total{reason=\"\(reason)\"} \(n)\n"
        }
    }
}
