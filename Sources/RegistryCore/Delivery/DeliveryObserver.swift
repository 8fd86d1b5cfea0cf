/// What the sender reports as it works (metrics): `RegistryHTTP`'s
/// `DeliveryMetrics` exports it on `/metrics`.
public protocol DeliveryObserver: Sendable {
    /// One request to APNs: its HTTP status and reason when answered (nil
    /// status: not sent, or an uncertain outcome, named by `outcome`).
    func apnsRequest(status: Int?, reason: String?, outcome: String, seconds: Double)
    /// A claimed delivery reached the settlement's state (final, or `queued`
    /// again for a retry). Where a failure is logged, with the token's
    /// fingerprint (never the token).
    func settled(_ settlement: DeliverySettlement, of claimed: ClaimedDelivery)
    /// Claims nobody will settle became `unknown` (a sender died or was
    /// killed while sending): counted, and logged in one line.
    func abandoned(_ count: Int)
    /// A new provider token was signed.
    func providerTokenRenewed()
    /// An answer that says the sender is misconfigured (`InvalidProviderToken`,
    /// `BadTopic`, ...): counted, and logged once per burst.
    func configurationProblem(reason: String, claimed: ClaimedDelivery)
    /// The sender could not reach its store, or apply an answer to the registry.
    func senderError(_ what: String, _ error: any Error)
    /// The queue's shape, read about once a second.
    func queue(_ stats: DeliveryQueueStats, now: Timestamp)
    /// APNs' answer removed `count` tokens (0 when the token had gone or was
    /// registered again since): counted with the feedback route's removals.
    func tokensRemoved(_ count: Int, reason: FeedbackReason)
}
