/// What the sender and its providers report as they work (metrics and
/// logs): `RegistryHTTP`'s `DeliveryTelemetry` exports it on `/metrics`.
/// Every call names the provider (its platform), so one dashboard shows
/// APNs and FCM side by side.
public protocol DeliveryObserver: Sendable {
    /// One request to a provider: its HTTP status and reason when answered
    /// (nil status: not sent, or an uncertain outcome, named by `outcome`).
    func providerRequest(_ provider: Platform, status: Int?, reason: String?, outcome: String, seconds: Double)
    /// A claimed delivery reached the settlement's state (final, or `queued`
    /// again for a retry). Where a failure is logged, with the token's
    /// fingerprint (never the token).
    func settled(_ settlement: DeliverySettlement, of claimed: ClaimedDelivery)
    /// A delivery its claim settled without a request (`failed` with
    /// `token_removed` or `token_changed`, `expired`, `cancelled`): logged
    /// and counted as a settled one is.
    func decidedAtClaim(_ delivery: DeliveryRecord)
    /// Claims nobody will settle became `unknown` (a sender died or was
    /// killed while sending): counted, and logged in one line.
    func abandoned(_ count: Int)
    /// A provider's credential (APNs provider token, FCM access token) was renewed.
    func credentialRenewed(_ provider: Platform)
    /// An answer that says the sender is misconfigured (`InvalidProviderToken`,
    /// `BadTopic`, `SENDER_ID_MISMATCH`, `fcm_auth_failed`, ...): counted,
    /// and logged once per burst, with the provider's `detail` when it gave one.
    func configurationProblem(_ provider: Platform, reason: String, appId: String, detail: String?)
    /// The sender could not reach its store, or apply an answer to the registry.
    func senderError(_ what: String, _ error: any Error)
    /// The queue's shape, read about once a second.
    func queue(_ stats: DeliveryQueueStats, now: Timestamp)
    /// A provider's answer removed `count` tokens (0 when the token had gone
    /// or was registered again since): counted with the feedback route's removals.
    func tokensRemoved(_ count: Int, reason: FeedbackReason)
}
