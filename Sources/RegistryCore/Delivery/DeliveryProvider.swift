/// A push service the registry delivers through (APNs, FCM): one module per
/// provider implements this, and the sender knows providers only through
/// it. A provider turns one claimed delivery into requests to its service
/// (its auth, its request shape) and the service's answers into one
/// provider-neutral `ProviderOutcome`; queue, states, retries across
/// claims, history and metrics are the sender's, written once.
public protocol DeliveryProvider: Sendable {
    /// The platform whose tokens it sends (one provider per platform).
    var platform: Platform { get }

    /// The apps it holds credentials for (an APNs topic, an FCM service
    /// account): a token of an app it does not serve is `failed` with
    /// `platform_not_configured` when the notification is accepted.
    var appIds: Set<String> { get }

    /// Sends one claimed delivery. Within one claim a provider may send
    /// more than one request (APNs: the other environment after
    /// `BadDeviceToken`, a renewed provider token; FCM: a renewed access
    /// token), reporting each to `observer`; the outcome says how many
    /// were written. Before each request after the first it asks
    /// `stillWanted`, and once that says no (the notification was
    /// cancelled) sends nothing more: the outcome is `.cancelled`. Never
    /// throws: whatever went wrong is an outcome.
    func send(_ claimed: ClaimedDelivery, observer: any DeliveryObserver,
              stillWanted: @escaping StillWanted) async -> ProviderOutcome

    /// How many times its credential (a provider token, an access token)
    /// was renewed since start, for metrics.
    var credentialRenewals: Int { get }

    /// Starts its connections (the sender's start).
    func start() throws

    /// Stops in order: requests in flight get `grace` to be answered, then
    /// end `unknown` (or as never sent, when they were not written).
    func stop(grace: Duration)
}

/// Whether a claimed delivery is still to be sent: asked before a
/// follow-up request within one claim, `false` once its notification was
/// cancelled.
public typealias StillWanted = @Sendable () async -> Bool

public extension DeliveryProvider {
    /// Sends with nothing to stop it (a provider's own tests).
    func send(_ claimed: ClaimedDelivery, observer: any DeliveryObserver) async -> ProviderOutcome {
        await send(claimed, observer: observer, stillWanted: { true })
    }
}

/// What one claim of one delivery came to, in the terms the delivery rules
/// need (`DeliveryRules`); the provider's own reasons ride along for the
/// API, logs and metrics.
public struct ProviderOutcome: Sendable, Hashable {
    public enum Verdict: Sendable, Hashable {
        /// Accepted by the provider (not seen by a person): its message id
        /// (APNs' `apns-id`, FCM's `name`), and the environment the token
        /// turned out to belong to when it is not the stored one.
        case delivered(messageId: String?, correctedEnvironment: APNsEnvironment?)
        /// The token is dead: remove it as `POST /internal/v1/feedback`
        /// would (guard time included, when the provider gave one); the
        /// delivery fails.
        case removeToken(FeedbackReason, registeredBefore: Timestamp?)
        /// Not delivered, and safe to send again by a later claim (429,
        /// 5xx, a request never written), not before `after` when given.
        /// With `configurationProblem` set it is also logged and counted as
        /// one (APNs' `TooManyProviderTokenUpdates`).
        case retry(after: Duration?)
        /// Refused for the sender's configuration (key, team, topic,
        /// service account): fails, the token is kept, logged and counted.
        case configurationProblem
        /// Refused for this delivery; the token is kept.
        case failed
        /// The provider may have it (a timeout, a connection lost after the
        /// request was written): never sent again.
        case unknown
        /// The notification was cancelled before a follow-up request this
        /// claim needed (a retry, the other environment, a renewed
        /// credential): that request was not sent; the token is kept.
        case cancelled
    }

    public var verdict: Verdict
    /// The provider's last HTTP status, if it answered.
    public var status: Int?
    /// The provider's reason (`Unregistered`, `QUOTA_EXCEEDED`, …), or the registry's.
    public var reason: String?
    /// Requests written during this claim (`attempts` counts them all).
    public var requests: Int
    /// The APNs environment that answered last (`nil`: the stored one stands).
    public var environment: APNsEnvironment?
    /// What an operator needs beyond the reason (a token endpoint's
    /// `error_description`), for the configuration-problem log line.
    public var detail: String?
    /// The answer also says the sender is misconfigured, though its verdict
    /// is not `.configurationProblem`: logged and counted as one all the
    /// same. A `.retry` with it set is an answer that names a configuration
    /// problem a later request may not meet (APNs' `TooManyProviderTokenUpdates`,
    /// `UnrelatedKeyIdInToken`), so the delivery is retried as usual and
    /// fails with that reason after the last retry.
    public var configurationProblem: Bool
    /// The provider's own id of the answer for its delivery logs (APNs'
    /// `apns-unique-id`, sent by the development environment), when it
    /// gave one. Not stored by the sender yet.
    public var uniqueId: String?

    public init(_ verdict: Verdict, status: Int? = nil, reason: String? = nil, requests: Int, environment: APNsEnvironment? = nil,
                detail: String? = nil, configurationProblem: Bool = false, uniqueId: String? = nil) {
        self.verdict = verdict
        self.status = status
        self.reason = reason
        self.requests = requests
        self.environment = environment
        self.detail = detail
        self.configurationProblem = configurationProblem
        self.uniqueId = uniqueId
    }
}

/// The providers a sender delivers through, one per platform.
public struct DeliveryProviders: Sendable {
    public let byPlatform: [Platform: any DeliveryProvider]

    public init(_ providers: [any DeliveryProvider]) {
        var byPlatform: [Platform: any DeliveryProvider] = [:]
        for provider in providers { byPlatform[provider.platform] = provider }
        self.byPlatform = byPlatform
    }

    public var isEmpty: Bool { byPlatform.isEmpty }

    public subscript(platform: Platform) -> (any DeliveryProvider)? { byPlatform[platform] }

    /// Which platforms each app can be sent on.
    public var capabilities: DeliveryCapabilities {
        var platforms: [String: Set<Platform>] = [:]
        for (platform, provider) in byPlatform {
            for app in provider.appIds { platforms[app, default: []].insert(platform) }
        }
        return DeliveryCapabilities(platforms)
    }
}

/// Which platforms each app can be sent on: what a notification's accept
/// decides with (`no_payload_for_platform`, `platform_not_configured`, an
/// app none serves) without holding the providers themselves.
public struct DeliveryCapabilities: Sendable, Hashable {
    private let byApp: [String: Set<Platform>]
    private let everyApp: Set<Platform>

    /// `byApp`: appId → the platforms with credentials for it.
    public init(_ byApp: [String: Set<Platform>]) {
        self.byApp = byApp
        everyApp = []
    }

    /// The same platforms for every app (tests, and a sender without per-app credentials).
    public init(everyApp platforms: Set<Platform>) {
        byApp = [:]
        everyApp = platforms
    }

    public func platforms(appId: String) -> Set<Platform> { byApp[appId] ?? everyApp }

    public func canSend(_ platform: Platform, appId: String) -> Bool { platforms(appId: appId).contains(platform) }

    /// Whether any provider serves `appId` (a notification to an app none serves is a 400).
    public func servesAny(appId: String) -> Bool { !platforms(appId: appId).isEmpty }
}
