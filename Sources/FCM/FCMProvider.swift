import HTTP2
import RegistryCore

/// FCM behind the delivery seam: each claimed delivery becomes `POST
/// {fcm-url}/v1/projects/{project_id}/messages:send` with the caller's
/// `fcm` members and the device's token, over the shared HTTP/2 transport,
/// authorised by the app's service account's access token; FCM's answers
/// become outcomes by `FCMAttempt`'s rules.
public final class FCMProvider: DeliveryProvider {
    public let platform = Platform.fcm
    let http: HTTP2Client
    /// appId → that app's service account's access tokens.
    let accounts: [String: AccessTokens]
    let origin: String
    let clock: any WallClock

    /// `accounts`: appId → its service account. Checks the URLs (`https://`
    /// only) and the transport's configuration; connects at `start`.
    public init(configuration: FCMConfiguration, accounts: [String: ServiceAccount],
                clock: any WallClock = SystemClock()) throws(ServiceAccountError) {
        if let problem = HTTP2Client.problem(withOrigin: configuration.fcmURL) {
            throw ServiceAccountError("the FCM URL \(configuration.fcmURL) \(problem)")
        }
        do {
            http = try HTTP2Client(configuration: configuration.http)
        } catch {
            throw ServiceAccountError(error.message)
        }
        // One AccessTokens per service account (and token URL): apps sharing a Firebase project share its token.
        var shared: [String: AccessTokens] = [:]
        var byApp: [String: AccessTokens] = [:]
        for (appId, account) in accounts.sorted(by: { $0.key < $1.key }) {
            let url = try TokenURL.parse(configuration.tokenURL ?? account.tokenURI).get()
            let key = account.clientEmail + " " + account.privateKeyId + " " + url.url
            let tokens = shared[key] ?? AccessTokens(account: account, tokenURL: url, http: http)
            shared[key] = tokens
            byApp[appId] = tokens
        }
        self.accounts = byApp
        origin = HTTP2Client.trimmedOrigin(configuration.fcmURL)
        self.clock = clock
    }

    public var appIds: Set<String> { Set(accounts.keys) }

    public var credentialRenewals: Int {
        var seen = Set<ObjectIdentifier>()
        return accounts.values.reduce(0) { total, tokens in
            seen.insert(ObjectIdentifier(tokens)).inserted ? total + tokens.renewals : total
        }
    }

    public func start() throws { http.start() }

    public func stop(grace: Duration) { http.stop(grace: grace) }

    public func send(_ claimed: ClaimedDelivery, observer: any DeliveryObserver,
                     stillWanted: @escaping StillWanted) async -> ProviderOutcome {
        let notification = claimed.notification
        guard let tokens = accounts[notification.appId] else {
            // The app lost its service account between accept and send (a restart with other flags).
            return ProviderOutcome(.failed, reason: DeliveryReason.platformNotConfigured, requests: 0)
        }
        guard let fcm = notification.fcm else {
            return ProviderOutcome(.failed, reason: DeliveryReason.noPayloadForPlatform, requests: 0)
        }
        let path = "/v1/projects/\(tokens.account.projectId)/messages:send"
        var attempt = FCMAttempt()
        while true {
            let accessToken: String
            switch await tokens.current() {
            case .success(let token):
                accessToken = token
            case .failure(.refused(let why)):
                observer.providerRequest(.fcm, status: nil, reason: "fcm_auth_failed", outcome: "token_refused", seconds: 0)
                return ProviderOutcome(.configurationProblem, reason: "fcm_auth_failed", requests: attempt.requests,
                                       detail: why)
            case .failure(.unavailable(let why)):
                observer.providerRequest(.fcm, status: nil, reason: nil, outcome: "not_sent", seconds: 0)
                return attempt.notSent(why)
            }
            let sentAt = clock.now()
            let secondsLeft = (notification.expiration.milliseconds - sentAt.milliseconds) / 1000
            let request = HTTP2Request(origin: origin, path: path, headers: ["content-type: application/json; charset=utf-8"],
                                       authorization: { "Bearer " + accessToken },
                                       body: FCMMessage.body(fcm: fcm, token: claimed.token, secondsLeft: secondsLeft),
                                       responseHeaders: ["retry-after"])
            switch await http.send(request) {
            case .notSent(let why), .refused(let why):
                // A refused stream was not processed: retried later like a request never written.
                observer.providerRequest(.fcm, status: nil, reason: nil, outcome: "not_sent", seconds: 0)
                return attempt.notSent(why)
            case .uncertain(let why):
                observer.providerRequest(.fcm, status: nil, reason: nil, outcome: "uncertain", seconds: 0)
                return attempt.uncertain(why)
            case .answered(let response):
                let answer = FCMAnswer(status: response.status, body: response.body,
                                       retryAfter: response.headers["retry-after"].flatMap { Int($0) })
                observer.providerRequest(.fcm, status: response.status, reason: answer.code, outcome: "answered",
                                         seconds: response.latency)
                switch attempt.next(after: answer, sentAt: sentAt) {
                case .renewAccessTokenAndSend:
                    guard await stillWanted() else {
                        // Cancelled while this request was in flight: its resend is not made.
                        return ProviderOutcome(.cancelled, status: response.status, reason: answer.code, requests: attempt.requests)
                    }
                    tokens.refused(accessToken)
                case .finish(let outcome):
                    return outcome
                }
            }
        }
    }
}
