import RegistryCore

/// APNs behind the delivery seam: each claimed delivery becomes `POST
/// /3/device/{token}` on its environment's host with the notification's
/// payload and headers, and APNs's answers become outcomes by
/// `APNsAttempt`'s rules. The provider tokens are the client's, one key
/// per host.
public final class APNsProvider: DeliveryProvider {
    public let platform = Platform.apns
    let client: APNsClient
    /// appId → APNs topic (bundle id).
    let topics: [String: String]

    public init(client: APNsClient, topics: [String: String]) {
        self.client = client
        self.topics = topics
    }

    public var appIds: Set<String> { Set(topics.keys) }

    public var credentialRenewals: Int { client.credentialRenewals }

    public func start() throws { client.start() }

    public func stop(grace: Duration) { client.stop(grace: grace) }

    public func send(_ claimed: ClaimedDelivery, observer: any DeliveryObserver,
                     stillWanted: @escaping StillWanted) async -> ProviderOutcome {
        let notification = claimed.notification
        guard let bundle = topics[notification.appId] else {
            // The app lost its topic between accept and send (a restart with other flags).
            return ProviderOutcome(.failed, reason: DeliveryReason.topicNotConfigured, requests: 0)
        }
        guard let payload = notification.payload else {
            return ProviderOutcome(.failed, reason: DeliveryReason.noPayloadForPlatform, requests: 0)
        }
        let topic = notification.pushType == .liveactivity ? bundle + ".push-type.liveactivity" : bundle
        var attempt = APNsAttempt(storedEnvironment: claimed.delivery.environment)
        var environment = attempt.storedEnvironment
        while true {
            let host: APNsHost = environment == .production ? .production : .sandbox
            let request = APNsRequest(deviceToken: claimed.token, host: host,
                                      topic: topic, pushType: notification.pushType.rawValue, priority: notification.priority,
                                      expiration: notification.expiration.milliseconds / 1000, collapseId: notification.collapseId,
                                      apnsId: claimed.delivery.apnsId, payload: payload)
            let result = await client.send(request)
            report(result, to: observer)
            let step = attempt.next(after: result, apnsId: claimed.delivery.apnsId)
            if case .finish(let outcome) = step { return outcome }
            guard await stillWanted() else {
                // Cancelled while this request was in flight: its follow-up is not sent.
                let answer: APNsAnswer? = if case .answered(let answer) = result { answer } else { nil }
                return ProviderOutcome(.cancelled, status: answer?.status, reason: answer?.reason, requests: attempt.requests,
                                       environment: environment)
            }
            switch step {
            case .send(let next):
                environment = next
            case .renewProviderTokenAndSend(let next):
                if case .answered(let answered) = result { client.tokens(for: host).expired(answered.providerToken) }
                environment = next
            case .finish:
                break
            }
        }
    }

    private func report(_ result: APNsResult, to observer: any DeliveryObserver) {
        switch result {
        case .answered(let answer):
            observer.providerRequest(.apns, status: answer.status, reason: answer.reason, outcome: "answered", seconds: answer.latency)
        case .notSent, .refused:
            // A refused stream was never processed: counted as not sent.
            observer.providerRequest(.apns, status: nil, reason: nil, outcome: "not_sent", seconds: 0)
        case .uncertain:
            observer.providerRequest(.apns, status: nil, reason: nil, outcome: "uncertain", seconds: 0)
        }
    }
}
