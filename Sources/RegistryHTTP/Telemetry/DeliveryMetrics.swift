import RegistryCore
import Synchronization

/// The delivery half of `/metrics`, every provider's figures under a
/// `provider` label (`apns`, `fcm`): requests by status and reason, their
/// latency, deliveries by state, credential renewals, configuration errors;
/// and the queue's depth and the age of its oldest due delivery.
///
/// Reasons are the providers' documented sets and the registry's own; any
/// other text an answer carries is counted as `other`, so no answer can
/// create series.
public final class DeliveryMetrics: Sendable {
    private struct State {
        var requests: [RequestKey: UInt64] = [:]
        var latency: [Platform: Histogram] = [:]
        var settled: [SettledKey: UInt64] = [:]
        var abandoned: UInt64 = 0
        var accepted: UInt64 = 0
        var acceptedDeliveries: UInt64 = 0
        var renewals: [Platform: UInt64] = [:]
        var configurationErrors: [RequestKey: UInt64] = [:]
        var queue: DeliveryQueueStats?
        var oldestAgeSeconds: Double = 0
    }

    /// A request's (or a configuration error's) labels; `status` is empty for configuration errors.
    private struct RequestKey: Hashable, Comparable {
        var provider: String
        var status: String
        var reason: String

        static func < (a: RequestKey, b: RequestKey) -> Bool { (a.provider, a.status, a.reason) < (b.provider, b.status, b.reason) }
    }

    private struct SettledKey: Hashable {
        var provider: Platform
        var state: DeliveryState
    }

    /// APNs' reasons (Apple's "Handling notification responses from APNs").
    static let apnsReasons: Set<String> = [
        "BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic",
        "DeviceTokenNotForTopic", "DuplicateHeaders", "IdleTimeout", "InvalidPushType", "MissingDeviceToken",
        "MissingTopic", "PayloadEmpty", "TopicDisallowed", "BadCertificate", "BadCertificateEnvironment",
        "ExpiredProviderToken", "Forbidden", "InvalidProviderToken", "MissingProviderToken", "UnrelatedKeyIdInToken",
        "BadEnvironmentKeyInToken", "BadPath", "MethodNotAllowed", "ExpiredToken", "Unregistered", "PayloadTooLarge",
        "TooManyProviderTokenUpdates", "TooManyRequests", "InternalServerError", "ServiceUnavailable", "Shutdown",
    ]
    /// FCM's error codes (`FcmError`) and statuses, and the registry's reasons for them.
    static let fcmReasons: Set<String> = [
        "UNSPECIFIED_ERROR", "INVALID_ARGUMENT", "UNREGISTERED", "SENDER_ID_MISMATCH", "QUOTA_EXCEEDED", "UNAVAILABLE",
        "INTERNAL", "THIRD_PARTY_AUTH_ERROR", "PERMISSION_DENIED", "UNAUTHENTICATED", "NOT_FOUND", "RESOURCE_EXHAUSTED",
        "InvalidToken", "Unregistered", "fcm_auth_failed",
    ]

    private let state = Mutex(State())

    public init() {}

    private static func bounded(_ reason: String?) -> String {
        guard let reason else { return "" }
        return apnsReasons.contains(reason) || fcmReasons.contains(reason) ? reason : "other"
    }

    func recordRequest(_ provider: Platform, status: Int?, reason: String?, outcome: String, seconds: Double) {
        let key = RequestKey(provider: provider.rawValue, status: status.map(String.init) ?? outcome, reason: Self.bounded(reason))
        state.withLock { s in
            s.requests[key, default: 0] += 1
            if status != nil { s.latency[provider, default: Histogram(bounds: Histogram.latencySeconds)].observe(seconds) }
        }
    }

    func recordSettled(_ provider: Platform, _ deliveryState: DeliveryState) {
        state.withLock { s in s.settled[SettledKey(provider: provider, state: deliveryState), default: 0] += 1 }
    }

    func recordAbandoned(_ count: Int) {
        state.withLock { s in s.abandoned += UInt64(count) }
    }

    func recordRenewal(_ provider: Platform) {
        state.withLock { s in s.renewals[provider, default: 0] += 1 }
    }

    func recordConfigurationError(_ provider: Platform, reason: String) {
        let key = RequestKey(provider: provider.rawValue, status: "", reason: Self.bounded(reason))
        state.withLock { s in s.configurationErrors[key, default: 0] += 1 }
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
        PrometheusText.header("registry_provider_requests_total", type: "counter",
                              help: "Requests to a provider (APNs, FCM) by HTTP status (or not_sent, uncertain) and reason.",
                              into: &out)
        for (key, n) in s.requests.sorted(by: { $0.key < $1.key }) {
            out += "registry_provider_requests_total{provider=\"\(key.provider)\",status=\"\(key.status)\",reason=\"\(key.reason)\"} \(n)\n"
        }
        PrometheusText.header("registry_provider_request_duration_seconds", type: "histogram",
                              help: "Time from sending a request to a provider to its answer.", into: &out)
        for provider in Platform.allCases {
            let histogram = s.latency[provider] ?? Histogram(bounds: Histogram.latencySeconds)
            histogram.render(name: "registry_provider_request_duration_seconds", labels: "provider=\"\(provider.rawValue)\"", into: &out)
        }
        PrometheusText.header("registry_deliveries_settled_total", type: "counter",
                              help: "Deliveries that reached a state after being sent, by provider (queued: a retry).", into: &out)
        for provider in Platform.allCases {
            for deliveryState in DeliveryState.allCases where deliveryState != .sending {
                let n = s.settled[SettledKey(provider: provider, state: deliveryState), default: 0]
                out += "registry_deliveries_settled_total{provider=\"\(provider.rawValue)\",state=\"\(deliveryState.rawValue)\"} \(n)\n"
            }
        }
        PrometheusText.family("registry_deliveries_abandoned_total", type: "counter",
                              help: "Deliveries left sending by a sender that stopped or died, made unknown (never sent again).",
                              samples: [("", Double(s.abandoned))], into: &out)
        PrometheusText.family("registry_delivery_queue", type: "gauge",
                              help: "Deliveries waiting (queued) and in flight (sending).", label: "state",
                              samples: [("queued", Double(s.queue?.queued ?? 0)), ("sending", Double(s.queue?.sending ?? 0))],
                              into: &out)
        PrometheusText.family("registry_delivery_oldest_queued_age_seconds", type: "gauge",
                              help: "How long the oldest due queued delivery has waited (0: none).",
                              samples: [("", s.oldestAgeSeconds)], into: &out)
        PrometheusText.family("registry_provider_credential_renewals_total", type: "counter",
                              help: "Provider credentials renewed: APNs provider tokens (ES256 JWTs), FCM access tokens.",
                              label: "provider", samples: Platform.allCases.map { ($0.rawValue, Double(s.renewals[$0, default: 0])) },
                              into: &out)
        PrometheusText.header("registry_provider_configuration_errors_total", type: "counter",
                              help: "Provider answers that blame the sender's configuration (key, team, topic, service account), by reason.",
                              into: &out)
        for (key, n) in s.configurationErrors.sorted(by: { $0.key < $1.key }) {
            out += "registry_provider_configuration_errors_total{provider=\"\(key.provider)\",reason=\"\(key.reason)\"} \(n)\n"
        }
    }
}
