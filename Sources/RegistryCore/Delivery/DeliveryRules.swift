/// What a provider's outcome means for a delivery, every provider the same
/// way (docs/delivery.md "States and rules"): the state it settles in, its
/// retry across claims (jittered exponential backoff, at most
/// `maxRetries`, never past the notification's expiration), and what the
/// answer changes in the registry (a removal, an environment correction).
public enum DeliveryRules {
    /// Claims that may end in a retryable outcome before the delivery fails.
    public static let maxRetries = 3

    /// A settled claim: the delivery's new state and what to apply first.
    public struct Decision: Sendable, Hashable {
        public var settlement: DeliverySettlement
        /// Applied to the registry before the settlement is written.
        public var effect: DeliveryEffect?
        /// Logged and counted as the sender's misconfiguration.
        public var configurationProblem: Bool
    }

    /// The decision for `outcome`, reached at `now`. `jitter` is in 0..<1
    /// (a random draw; tests pass fixed ones).
    public static func decide(_ outcome: ProviderOutcome, for claimed: ClaimedDelivery, now: Timestamp, jitter: Double) -> Decision {
        var settlement = DeliverySettlement(
            notificationId: claimed.delivery.notificationId, index: claimed.delivery.index, state: .failed,
            status: outcome.status, reason: outcome.reason, environment: outcome.environment ?? claimed.delivery.environment,
            requests: outcome.requests, retried: false, notBefore: nil, tokenFingerprint: HistoryEvent.fingerprint(of: claimed.token),
            messageId: nil, apnsUniqueId: outcome.uniqueId)
        var effect: DeliveryEffect?
        var problem = outcome.configurationProblem
        switch outcome.verdict {
        case .delivered(let messageId, let corrected):
            settlement.state = .delivered
            settlement.messageId = messageId
            effect = corrected.map { .correctEnvironment($0) }
        case .removeToken(let reason, let before):
            effect = .removeToken(reason, registeredBefore: before)
        case .retry(let after):
            settlement.retried = true
            let retries = claimed.delivery.retries + 1
            if retries < maxRetries {
                let base = 1000.0 * Double(1 << (retries - 1))
                var at = now.adding(.milliseconds(Int64(base * (0.75 + 0.5 * jitter))))
                if let after { at = max(at, now.adding(after)) }
                if at <= claimed.notification.expiration {
                    settlement.state = .queued
                    settlement.notBefore = at
                } else {
                    settlement.state = .expired
                }
            }
        case .configurationProblem:
            problem = true
        case .failed:
            break
        case .unknown:
            settlement.state = .unknown
        case .cancelled:
            settlement.state = .cancelled
        }
        return Decision(settlement: settlement, effect: effect, configurationProblem: problem)
    }
}

/// What a provider's answer changes in the registry, applied as the routes
/// would (`POST /internal/v1/feedback`, `POST /internal/v1/tokens/environment`).
public enum DeliveryEffect: Sendable, Hashable {
    /// Removes the token (feedback), with the timestamp guard when the provider gave a time.
    case removeToken(FeedbackReason, registeredBefore: Timestamp?)
    /// The token works on the other environment: record that.
    case correctEnvironment(APNsEnvironment)
}
