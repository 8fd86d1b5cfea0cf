/// What the sender reports as it works (metrics): `RegistryHTTP`'s
/// `DeliveryMetrics` exports it on `/metrics`.
public protocol DeliveryObserver: Sendable {
    /// One request to APNs: its HTTP status and reason when answered (nil
    /// status: not sent, or an uncertain outcome, named by `outcome`).
    func apnsRequest(status: Int?, reason: String?, outcome: String, seconds: Double)
    /// A delivery reached `state` (final, or `queued` again for a retry).
    func settled(_ state: DeliveryState)
    /// A new provider token was signed.
    func providerTokenRenewed()
    /// An answer that says the sender is misconfigured (`InvalidProviderToken`, `BadTopic`, ...).
    func configurationProblem(reason: String)
    /// The queue's shape, read about once a second.
    func queue(_ stats: DeliveryQueueStats, now: Timestamp)
}
