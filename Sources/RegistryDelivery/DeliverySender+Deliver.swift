import RegistryCore

extension DeliverySender {
    /// One claimed delivery, from its provider's outcome to its settlement.
    func deliver(_ claimed: ClaimedDelivery) async {
        let outcome: ProviderOutcome
        if let provider = providers[claimed.delivery.platform] {
            let store = store, id = claimed.delivery.notificationId
            outcome = await provider.send(claimed, observer: observer, stillWanted: {
                // A store that cannot answer now does not stop the delivery.
                (try? await store.notification(id: id))?.cancelled != true
            })
        } else {
            // Accepted while a provider was configured, claimed after a restart without it.
            outcome = ProviderOutcome(.failed, reason: DeliveryReason.platformNotConfigured, requests: 0)
        }
        let decision = DeliveryRules.decide(outcome, for: claimed, now: clock.now(), jitter: Double.random(in: 0..<1))
        if decision.configurationProblem {
            observer.configurationProblem(claimed.delivery.platform, reason: decision.settlement.reason ?? "",
                                          appId: claimed.delivery.target.appId, detail: outcome.detail)
        }
        if let effect = decision.effect { await apply(effect, claimed) }
        observer.settled(decision.settlement, of: claimed)
        await settlements.add(decision.settlement)
    }

    /// What the provider said about the token, applied as the feedback and
    /// environment routes would (the same rules, guards and history events).
    private func apply(_ effect: DeliveryEffect, _ claimed: ClaimedDelivery) async {
        do {
            switch effect {
            case .removeToken(let reason, let before):
                observer.tokensRemoved(try await registry.removeToken(claimed.token, reason: reason, registeredBefore: before),
                                       reason: reason)
            case .correctEnvironment(let environment):
                _ = try await registry.correctEnvironment(token: claimed.token, environment: environment)
            }
        } catch {
            observer.senderError("apply \(effect) for delivery \(claimed.delivery.notificationId)/\(claimed.delivery.index)", error)
        }
    }
}
