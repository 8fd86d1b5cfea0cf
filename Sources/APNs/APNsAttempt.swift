import RegistryCore

/// The APNs rules of one claim of one delivery (docs/delivery.md "States and
/// rules"), as a state machine `APNsProvider` drives: it sends, reports the
/// answer, and does what `next` says until it says `finish`.
///
/// Within one claim up to three requests go out: the first, one more to the
/// other environment after `BadDeviceToken`, and one more with a new
/// provider token after `ExpiredProviderToken`. Neither extra one counts
/// toward the retries across claims (`DeliveryRules`); all count in
/// `attempts`.
package struct APNsAttempt {
    package enum Step: Hashable {
        /// Send again now, to this environment.
        case send(APNsEnvironment)
        /// Renew the provider token (if it is older than a minute), then send again.
        case renewProviderTokenAndSend(APNsEnvironment)
        /// The claim is over.
        case finish(ProviderOutcome)
    }

    /// APNs reasons that say the sender is misconfigured, not the token bad.
    static let configurationReasons: Set<String> = [
        "InvalidProviderToken", "BadEnvironmentKeyInToken", "BadTopic", "TopicDisallowed", "ExpiredProviderToken",
        "MissingProviderToken", "MissingTopic",
    ]
    /// Statuses retried with backoff.
    static let retryableStatuses: Set<Int> = [429, 500, 503]

    /// The environment the token is stored with (as the claim read it).
    package let storedEnvironment: APNsEnvironment
    package private(set) var environment: APNsEnvironment
    package private(set) var requests = 0
    private var triedOtherEnvironment = false
    private var renewedProviderToken = false

    package init(storedEnvironment: APNsEnvironment) {
        self.storedEnvironment = storedEnvironment
        environment = storedEnvironment
    }

    /// The next step after `result` (of a request sent to `environment`).
    package mutating func next(after result: APNsResult, apnsId: String) -> Step {
        switch result {
        case .notSent(let why):
            return .finish(outcome(.retry(after: nil), status: nil, reason: why))
        case .uncertain(let why):
            requests += 1
            return .finish(outcome(.unknown, status: nil, reason: why))
        case .answered(let answer):
            requests += 1
            return next(after: answer, apnsId: apnsId)
        }
    }

    private mutating func next(after answer: APNsAnswer, apnsId: String) -> Step {
        let (status, reason) = (answer.status, answer.reason)
        switch (status, reason) {
        case (200, _):
            let corrected = environment == storedEnvironment ? nil : environment
            return .finish(outcome(.delivered(messageId: answer.apnsId ?? apnsId, correctedEnvironment: corrected),
                                   status: 200, reason: nil))
        case (410, _):
            let before = answer.timestamp.map { Timestamp(milliseconds: $0) }
            return .finish(outcome(.removeToken(.unregistered, registeredBefore: before), status: 410, reason: reason ?? "Unregistered"))
        case (400, "BadDeviceToken"):
            if !triedOtherEnvironment {
                triedOtherEnvironment = true
                environment = environment == .production ? .sandbox : .production
                return .send(environment)
            }
            return .finish(outcome(.removeToken(.badDeviceToken, registeredBefore: nil), status: 400, reason: "BadDeviceToken"))
        case (403, "ExpiredProviderToken") where !renewedProviderToken:
            renewedProviderToken = true
            return .renewProviderTokenAndSend(environment)
        case _ where Self.retryableStatuses.contains(status):
            return .finish(outcome(.retry(after: answer.retryAfter.map { .seconds($0) }), status: status, reason: reason))
        default:
            let problem = reason.map(Self.configurationReasons.contains) ?? false
            return .finish(outcome(problem ? .configurationProblem : .failed, status: status, reason: reason))
        }
    }

    private func outcome(_ verdict: ProviderOutcome.Verdict, status: Int?, reason: String?) -> ProviderOutcome {
        ProviderOutcome(verdict, status: status, reason: reason, requests: requests, environment: environment)
    }
}
