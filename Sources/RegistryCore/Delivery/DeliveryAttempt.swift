/// The rules of one claim of one delivery (docs/delivery.md "States and
/// rules"), as a state machine the sender drives: it sends, reports the
/// answer, and does what `next` says until it says `finish`.
///
/// Within one claim the registry may send up to three requests: the first,
/// one more to the other environment after `BadDeviceToken`, and one more
/// with a new provider token after `ExpiredProviderToken`. Neither of the
/// two extra ones counts toward the three retries across claims; all count
/// in `attempts`.
public struct DeliveryAttempt: Sendable {
    public enum Step: Sendable, Hashable {
        /// Send again now, to this environment.
        case send(APNsEnvironment)
        /// Renew the provider token (if it is older than a minute), then send again.
        case renewProviderTokenAndSend(APNsEnvironment)
        /// The claim is over: apply `effect` (if any) to the registry, then settle.
        case finish(DeliverySettlement, effect: DeliveryEffect?, configurationProblem: Bool)
    }

    /// APNs reasons that say the sender is misconfigured, not the token bad.
    public static let configurationReasons: Set<String> = [
        "InvalidProviderToken", "BadEnvironmentKeyInToken", "BadTopic", "TopicDisallowed", "ExpiredProviderToken",
        "MissingProviderToken", "MissingTopic",
    ]
    /// Statuses retried with backoff.
    public static let retryableStatuses: Set<Int> = [429, 500, 503]
    /// Claims that may end in a retryable answer before the delivery fails.
    public static let maxRetries = 3

    public let claimed: ClaimedDelivery
    /// The environment the token is stored with (as the claim read it).
    public let storedEnvironment: APNsEnvironment
    public private(set) var environment: APNsEnvironment
    public private(set) var requests = 0
    private var triedOtherEnvironment = false
    private var renewedProviderToken = false

    public init(_ claimed: ClaimedDelivery) {
        self.claimed = claimed
        storedEnvironment = claimed.delivery.environment
        environment = storedEnvironment
    }

    /// The first request goes to the token's own environment.
    public var first: APNsEnvironment { storedEnvironment }

    /// The next step after `answer` (to a request sent to `environment`).
    /// `jitter` is in 0..<1 (a random draw; tests pass fixed ones).
    public mutating func next(after answer: PushAnswer, now: Timestamp, jitter: Double) -> Step {
        requests += 1
        switch answer {
        case .answered(200, _, _, _):
            let effect: DeliveryEffect? = environment == storedEnvironment ? nil : .correctEnvironment(environment)
            return finish(.delivered, status: 200, reason: nil, effect: effect)
        case .answered(410, let reason, let timestamp, _):
            return finish(.failed, status: 410, reason: reason ?? "Unregistered",
                          effect: .removeToken(.unregistered, registeredBefore: timestamp))
        case .answered(400, "BadDeviceToken", _, _):
            if !triedOtherEnvironment {
                triedOtherEnvironment = true
                environment = environment == .production ? .sandbox : .production
                return .send(environment)
            }
            return finish(.failed, status: 400, reason: "BadDeviceToken", effect: .removeToken(.badDeviceToken, registeredBefore: nil))
        case .answered(403, "ExpiredProviderToken", _, _) where !renewedProviderToken:
            renewedProviderToken = true
            return .renewProviderTokenAndSend(environment)
        case .answered(let status, let reason, _, let retryAfter) where Self.retryableStatuses.contains(status):
            return retry(status: status, reason: reason, retryAfter: retryAfter, now: now, jitter: jitter)
        case .answered(let status, let reason, _, _):
            let problem = reason.map(Self.configurationReasons.contains) ?? false
            return finish(.failed, status: status, reason: reason, effect: nil, configurationProblem: problem)
        case .notSent(let why):
            requests -= 1
            return retry(status: nil, reason: why, retryAfter: nil, now: now, jitter: jitter)
        case .uncertain(let why):
            return finish(.unknown, status: nil, reason: why, effect: nil)
        }
    }

    /// About 1 s, then 2 s (each ±25%), or APNs' Retry-After when longer;
    /// `failed` after the third retryable claim, `expired` when the next try
    /// would fall past the notification's expiration.
    private func retry(status: Int?, reason: String?, retryAfter: Duration?, now: Timestamp, jitter: Double) -> Step {
        let retries = claimed.delivery.retries + 1
        guard retries < Self.maxRetries else {
            return finish(.failed, status: status, reason: reason, effect: nil, retried: true)
        }
        let base = 1000.0 * Double(1 << (retries - 1))
        var at = now.adding(.milliseconds(Int64(base * (0.75 + 0.5 * jitter))))
        if let retryAfter { at = max(at, now.adding(retryAfter)) }
        guard at <= claimed.notification.expiration else {
            return finish(.expired, status: status, reason: reason, effect: nil, retried: true)
        }
        return finish(.queued, status: status, reason: reason, effect: nil, retried: true, notBefore: at)
    }

    private func finish(_ state: DeliveryState, status: Int?, reason: String?, effect: DeliveryEffect?,
                        configurationProblem: Bool = false, retried: Bool = false, notBefore: Timestamp? = nil) -> Step {
        let settlement = DeliverySettlement(
            notificationId: claimed.delivery.notificationId, index: claimed.delivery.index, state: state, status: status,
            reason: reason, environment: environment, requests: requests, retried: retried, notBefore: notBefore,
            tokenFingerprint: HistoryEvent.fingerprint(of: claimed.token))
        return .finish(settlement, effect: effect, configurationProblem: configurationProblem)
    }
}
