import JSON
import Synchronization
import RegistryCore

/// The sender's observations as metrics (`DeliveryMetrics`, and removals in the feedback counter) and log lines:
/// one line per failed or unknown delivery with the token's fingerprint
/// (never the token), and a configuration error once per reason per minute
/// with how many were not logged since (a wrong key fails every delivery;
/// the log must not drown in it).
public final class DeliveryTelemetry: DeliveryObserver {
    private let metrics: RegistryMetrics
    private let logger: Logger
    private let quiet: Duration
    private struct Burst {
        var lastLogged: ContinuousClock.Instant
        var suppressed: Int
    }
    private let bursts = Mutex([String: Burst]())

    public init(metrics: RegistryMetrics, logger: Logger, quiet: Duration = .seconds(60)) {
        self.metrics = metrics
        self.logger = logger
        self.quiet = quiet
    }

    public func providerRequest(_ provider: Platform, status: Int?, reason: String?, outcome: String, seconds: Double) {
        metrics.delivery.recordRequest(provider, status: status, reason: reason, outcome: outcome, seconds: seconds)
    }

    public func settled(_ settlement: DeliverySettlement, of claimed: ClaimedDelivery) {
        log(claimed.delivery, settlement.state, status: settlement.status, reason: settlement.reason,
            tokenFingerprint: settlement.tokenFingerprint, environment: settlement.environment)
    }

    public func decidedAtClaim(_ delivery: DeliveryRecord) {
        log(delivery, delivery.state, status: delivery.status, reason: delivery.reason, tokenFingerprint: delivery.tokenFingerprint,
            environment: delivery.environment)
    }

    /// Counts a delivery that reached `state`, and logs it when that is a
    /// failure (`failed`, `unknown`, `expired`): one line with the token's
    /// fingerprint, never the token.
    private func log(_ delivery: DeliveryRecord, _ state: DeliveryState, status: Int?, reason: String?, tokenFingerprint: String,
                     environment: APNsEnvironment) {
        metrics.delivery.recordSettled(delivery.platform, state)
        guard state == .failed || state == .unknown || state == .expired else { return }
        var fields: [(String, JSONWriter.Value)] = []
        fields.append(("notificationId", .string(delivery.notificationId)))
        fields.append(("userId", .string(delivery.target.userId)))
        fields.append(("deviceId", .string(delivery.target.deviceId)))
        fields.append(("appId", .string(delivery.target.appId)))
        fields.append(("kind", .string(delivery.target.kind.rawValue)))
        fields.append(("platform", .string(delivery.platform.rawValue)))
        fields.append(("tokenFingerprint", .string(tokenFingerprint)))
        fields.append(("environment", .string(environment.rawValue)))
        fields.append(("state", .string(state.rawValue)))
        if let status { fields.append(("status", .int(Int64(status)))) }
        if let reason { fields.append(("reason", .string(reason))) }
        logger.warning("delivery_\(state.rawValue)", fields)
    }

    public func abandoned(_ count: Int) {
        metrics.delivery.recordAbandoned(count)
        logger.warning("deliveries_abandoned", [
            ("count", .int(Int64(count))), ("state", .string("unknown")),
            ("detail", .string("claimed by a sender that stopped or died before it knew the outcome; never sent again")),
        ])
    }

    public func credentialRenewed(_ provider: Platform) { metrics.delivery.recordRenewal(provider) }

    public func configurationProblem(_ provider: Platform, reason: String, appId: String, detail: String?) {
        metrics.delivery.recordConfigurationError(provider, reason: reason)
        let now = ContinuousClock.now
        let burstKey = provider.rawValue + " " + reason
        let suppressed: Int? = bursts.withLock { bursts in
            if var burst = bursts[burstKey], now - burst.lastLogged < quiet {
                burst.suppressed += 1
                bursts[burstKey] = burst
                return nil
            }
            let before = bursts[burstKey]?.suppressed ?? 0
            bursts[burstKey] = Burst(lastLogged: now, suppressed: 0)
            return before
        }
        guard let suppressed else { return }
        var fields: [(String, JSONWriter.Value)] = [
            ("provider", .string(provider.rawValue)), ("reason", .string(reason)), ("appId", .string(appId)),
            ("suppressedSinceLast", .int(Int64(suppressed))), ("detail", .string(Self.configurationAdvice[provider] ?? "")),
        ]
        if let detail { fields.append(("providerDetail", .string(detail))) }
        logger.error("\(provider.rawValue)_configuration_error", fields)
    }

    /// What an operator checks when a provider blames the configuration.
    static let configurationAdvice: [Platform: String] = [
        .apns: "APNs refused the request for the sender's key, team or topic; check --apns-key-id, --apns-team-id, --apns-topic and the key file",
        .fcm: "FCM refused the request for the sender's credentials; check --fcm-service-account (the Firebase project of the app's Android tokens, the account's roles, a revoked key)",
    ]

    public func senderError(_ what: String, _ error: any Error) {
        logger.error("delivery_sender_error", [("during", .string(what)), ("error", .string(String(describing: error)))])
    }

    public func queue(_ stats: DeliveryQueueStats, now: Timestamp) { metrics.delivery.recordQueue(stats, now: now) }

    /// Removals on APNs' answers count where the feedback route's do, so
    /// `registry_feedback_removed_tokens_total` holds every removal APNs caused.
    public func tokensRemoved(_ count: Int, reason: FeedbackReason) {
        metrics.recordFeedback(reason: reason, removed: count)
    }
}
