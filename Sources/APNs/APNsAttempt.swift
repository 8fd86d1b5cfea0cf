import RegistryCore

/// The APNs rules of one claim of one delivery (docs/delivery.md "States and
/// rules"), as a state machine `APNsProvider` drives: it sends, reports the
/// answer, and does what `next` says until it says `finish`.
///
/// Within one claim up to three answered requests go out: the first, one
/// more to the other environment after `BadDeviceToken`, and one more with
/// a new provider token after `ExpiredProviderToken`. Neither extra one
/// counts toward the retries across claims (`DeliveryRules`); all count in
/// `requests`. A request whose stream was refused before APNs processed it
/// is sent again at once, up to `maxRefusedResends` times; it counts
/// nowhere, as a request never written does not.
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
    /// Configuration problems a later request may not meet (the token was
    /// renewed too often a moment ago; a key id APNs did not tie to the team
    /// yet): retried with backoff like a 5xx, and counted as configuration
    /// problems.
    static let retriedConfigurationReasons: Set<String> = ["TooManyProviderTokenUpdates", "UnrelatedKeyIdInToken"]
    /// Statuses retried with backoff.
    static let retryableStatuses: Set<Int> = [429, 500, 503]
    /// Refused streams sent again within one claim; one more refusal ends
    /// the claim as a request never written (retried later, counted).
    static let maxRefusedResends = 3

    /// The environment the token is stored with (as the claim read it).
    package let storedEnvironment: APNsEnvironment
    package private(set) var environment: APNsEnvironment
    package private(set) var requests = 0
    private var triedOtherEnvironment = false
    private var renewedProviderToken = false
    private var refusedResends = 0

    package init(storedEnvironment: APNsEnvironment) {
        self.storedEnvironment = storedEnvironment
        environment = storedEnvironment
    }

    /// The next step after `result` (of a request sent to `environment`).
    package mutating func next(after result: APNsResult, apnsId: String) -> Step {
        switch result {
        case .notSent(let why):
            return .finish(outcome(.retry(after: nil), status: nil, reason: why))
        case .refused(let why):
            guard refusedResends < Self.maxRefusedResends else {
                return .finish(outcome(.retry(after: nil), status: nil, reason: why))
            }
            refusedResends += 1
            return .send(environment)
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
                                   status: 200, reason: nil, uniqueId: answer.uniqueId))
        case (410, _):
            let before = answer.timestamp.map { Timestamp(milliseconds: $0) }
            let feedback: FeedbackReason = reason == "ExpiredToken" ? .expiredToken : .unregistered
            return .finish(outcome(.removeToken(feedback, registeredBefore: before), status: 410, reason: reason ?? "Unregistered",
                                   uniqueId: answer.uniqueId))
        case (400, "BadDeviceToken"):
            if !triedOtherEnvironment {
                triedOtherEnvironment = true
                environment = environment.other
                return .send(environment)
            }
            return .finish(outcome(.removeToken(.badDeviceToken, registeredBefore: nil), status: 400, reason: "BadDeviceToken",
                                   uniqueId: answer.uniqueId))
        case (403, "BadEnvironmentKeyInToken") where triedOtherEnvironment:
            // The other environment refused the key, not the token: the stored environment's BadDeviceToken stands.
            environment = environment.other
            return .finish(outcome(.failed, status: 400, reason: "BadDeviceToken"))
        case (403, "ExpiredProviderToken") where !renewedProviderToken:
            renewedProviderToken = true
            return .renewProviderTokenAndSend(environment)
        case _ where reason.map(Self.retriedConfigurationReasons.contains) ?? false:
            return .finish(outcome(.retry(after: answer.retryAfter.map { .seconds($0) }), status: status, reason: reason,
                                   configurationProblem: true, uniqueId: answer.uniqueId))
        case _ where Self.retryableStatuses.contains(status):
            return .finish(outcome(.retry(after: answer.retryAfter.map { .seconds($0) }), status: status, reason: reason,
                                   uniqueId: answer.uniqueId))
        default:
            let problem = reason.map(Self.configurationReasons.contains) ?? false
            return .finish(outcome(problem ? .configurationProblem : .failed, status: status, reason: reason,
                                   uniqueId: answer.uniqueId))
        }
    }

    private func outcome(_ verdict: ProviderOutcome.Verdict, status: Int?, reason: String?, configurationProblem: Bool = false,
                         uniqueId: String? = nil) -> ProviderOutcome {
        ProviderOutcome(verdict, status: status, reason: reason, requests: requests, environment: environment,
                        configurationProblem: configurationProblem, uniqueId: uniqueId)
    }
}

extension APNsEnvironment {
    /// The environment a `BadDeviceToken` sends the token to next.
    var other: APNsEnvironment { self == .production ? .sandbox : .production }
}
