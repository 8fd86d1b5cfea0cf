import APNs
import RegistryCore

extension DeliverySender {
    /// One claimed delivery, from its first request to its settlement.
    func deliver(_ claimed: ClaimedDelivery) async {
        let notification = claimed.notification
        guard let bundle = configuration.topics[notification.appId] else {
            // The app lost its topic between accept and send (a restart with other flags).
            let settlement = DeliverySettlement(
                notificationId: claimed.delivery.notificationId, index: claimed.delivery.index, state: .failed,
                status: nil, reason: DeliveryReason.topicNotConfigured, environment: claimed.delivery.environment, requests: 0,
                retried: false, notBefore: nil, tokenFingerprint: claimed.delivery.tokenFingerprint)
            await settle(settlement, claimed)
            return
        }
        let topic = notification.pushType == .liveactivity ? bundle + ".push-type.liveactivity" : bundle
        var attempt = DeliveryAttempt(claimed)
        var environment = attempt.first
        while true {
            let request = APNsRequest(deviceToken: claimed.token, host: environment == .production ? .production : .sandbox,
                                      topic: topic, pushType: notification.pushType.rawValue, priority: notification.priority,
                                      expiration: notification.expiration.milliseconds / 1000, collapseId: notification.collapseId,
                                      apnsId: claimed.delivery.apnsId, payload: notification.payload)
            let result = await client.send(request)
            let answer = PushAnswer(result)
            report(result)
            switch attempt.next(after: answer, now: clock.now(), jitter: Double.random(in: 0..<1)) {
            case .send(let next):
                environment = next
            case .renewProviderTokenAndSend(let next):
                if case .answered(let answered) = result { tokens.expired(answered.providerToken) }
                environment = next
            case .finish(let settlement, let effect, let configurationProblem):
                if configurationProblem { observer.configurationProblem(reason: settlement.reason ?? "", claimed: claimed) }
                if let effect { await apply(effect, claimed) }
                await settle(settlement, claimed)
                return
            }
        }
    }

    private func settle(_ settlement: DeliverySettlement, _ claimed: ClaimedDelivery) async {
        observer.settled(settlement, of: claimed)
        await settlements.add(settlement)
    }

    /// What APNs said about the token, applied as the feedback and
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

    private func report(_ result: APNsResult) {
        switch result {
        case .answered(let answer):
            observer.apnsRequest(status: answer.status, reason: answer.reason, outcome: "answered", seconds: answer.latency)
        case .notSent:
            observer.apnsRequest(status: nil, reason: nil, outcome: "not_sent", seconds: 0)
        case .uncertain:
            observer.apnsRequest(status: nil, reason: nil, outcome: "uncertain", seconds: 0)
        }
    }
}

extension PushAnswer {
    /// The client's result in the rules' terms.
    init(_ result: APNsResult) {
        switch result {
        case .answered(let answer):
            self = .answered(status: answer.status, reason: answer.reason,
                             timestamp: answer.timestamp.map { Timestamp(milliseconds: $0) },
                             retryAfter: answer.retryAfter.map { .seconds($0) })
        case .notSent(let why):
            self = .notSent(why)
        case .uncertain(let why):
            self = .uncertain(why)
        }
    }
}
