import APNs
import RegistryCore
import Testing

/// The rules of one claim of an APNs delivery (docs/delivery.md "States and
/// rules"), without a network: APNs's answers within the claim
/// (`APNsAttempt`), then what the outcome means across claims
/// (`DeliveryRules`), as the sender applies them one after the other.
@Suite struct APNsAttemptTests {
    static let now = Timestamp(milliseconds: 1_800_000_000_000)
    static let token = String(repeating: "ab", count: 32)

    static func claimed(environment: APNsEnvironment = .production, retries: Int = 0,
                        expiration: Timestamp = now.adding(seconds: 3600)) -> ClaimedDelivery {
        let request = NotificationRequest(target: .user("alice"), appId: "default", pushType: .alert, payload: Array("{}".utf8),
                                          priority: 10, expiration: expiration, collapseId: nil, idempotencyKey: nil, digest: [])
        let delivery = DeliveryRecord(notificationId: "n", index: 3,
                                      target: DeliveryTarget(userId: "alice", appId: "default", deviceId: "d", kind: .push, activityId: nil),
                                      tokenFingerprint: "", platform: .apns, environment: environment, state: .sending, apnsId: "id",
                                      status: nil, reason: nil, attempts: 0, retries: retries, updatedAt: now, notBefore: now, claimedAt: now)
        return ClaimedDelivery(delivery: delivery, token: token,
                               notification: NotificationRecord(id: "n", createdAt: now, request: request, counts: DeliveryCounts()))
    }

    static func answer(_ status: Int, _ reason: String? = nil, timestamp: Timestamp? = nil, retryAfter: Duration? = nil,
                       uniqueId: String? = nil) -> APNsResult {
        .answered(APNsAnswer(status: status, apnsId: nil, reason: reason, timestamp: timestamp?.milliseconds,
                             retryAfter: retryAfter.map { Int($0.components.seconds) }, latency: 0, providerToken: "",
                             uniqueId: uniqueId))
    }

    /// The sandbox's `apns-unique-id` rides on the outcome (the sender does not store it yet).
    @Test func theUniqueIdRidesOnTheOutcome() {
        var attempt = APNsAttempt(storedEnvironment: .sandbox)
        guard case .finish(let outcome) = attempt.next(after: Self.answer(200, uniqueId: "u-1"), apnsId: "id") else {
            Issue.record("not finished"); return
        }
        #expect(outcome.uniqueId == "u-1")
    }

    /// Three refused streams are sent again within the claim, uncounted;
    /// a fourth ends the claim as a request never written.
    @Test func refusedStreamsAreSentAgainThreeTimes() {
        var attempt = APNsAttempt(storedEnvironment: .production)
        for _ in 0..<3 { #expect(attempt.next(after: .refused("refused"), apnsId: "id") == .send(.production)) }
        #expect(attempt.next(after: .refused("refused"), apnsId: "id")
                    == .finish(ProviderOutcome(.retry(after: nil), reason: "refused", requests: 0, environment: .production)))
    }

    /// The settlement a finishing step carries (fails the test otherwise).
    static func finished(_ step: DeliveryAttempt.Step) -> (DeliverySettlement, DeliveryEffect?, Bool)? {
        guard case .finish(let settlement, let effect, let problem) = step else { return nil }
        return (settlement, effect, problem)
    }

    @Test func okIsDelivered() throws {
        var attempt = DeliveryAttempt(Self.claimed())
        let (settlement, effect, problem) = try #require(Self.finished(attempt.next(after: Self.answer(200), now: Self.now, jitter: 0.5)))
        #expect(settlement.state == .delivered && settlement.status == 200 && settlement.requests == 1)
        #expect(settlement.messageId == "id")  // APNs echoed no apns-id: the one the delivery was created with
        #expect(effect == nil && !problem)
        #expect(settlement.tokenFingerprint == HistoryEvent.fingerprint(of: Self.token))
    }

    @Test func unregisteredRemovesTheTokenWithAPNsTimestamp() throws {
        var attempt = DeliveryAttempt(Self.claimed())
        let at = Timestamp(milliseconds: 1_799_000_000_000)
        let (settlement, effect, _) = try #require(Self.finished(attempt.next(after: Self.answer(410, "Unregistered", timestamp: at),
                                                                            now: Self.now, jitter: 0.5)))
        #expect(settlement.state == .failed && settlement.reason == "Unregistered")
        #expect(effect == .removeToken(.unregistered, registeredBefore: at))
    }

    @Test func badDeviceTokenTriesTheOtherEnvironmentOnceThenCorrectsIt() throws {
        var attempt = DeliveryAttempt(Self.claimed(environment: .production))
        #expect(attempt.next(after: Self.answer(400, "BadDeviceToken"), now: Self.now, jitter: 0.5) == .send(.sandbox))
        let (settlement, effect, _) = try #require(Self.finished(attempt.next(after: Self.answer(200), now: Self.now, jitter: 0.5)))
        #expect(settlement.state == .delivered && settlement.environment == .sandbox && settlement.requests == 2)
        #expect(!settlement.retried)
        #expect(effect == .correctEnvironment(.sandbox))
    }

    @Test func badDeviceTokenOnBothEnvironmentsRemovesTheToken() throws {
        var attempt = DeliveryAttempt(Self.claimed(environment: .sandbox))
        #expect(attempt.next(after: Self.answer(400, "BadDeviceToken"), now: Self.now, jitter: 0.5) == .send(.production))
        let (settlement, effect, _) = try #require(Self.finished(attempt.next(after: Self.answer(400, "BadDeviceToken"),
                                                                            now: Self.now, jitter: 0.5)))
        #expect(settlement.state == .failed && settlement.reason == "BadDeviceToken" && settlement.environment == .production)
        #expect(effect == .removeToken(.badDeviceToken, registeredBefore: nil))
    }

    @Test func retryableAnswersWaitWithJitterAndHonourRetryAfter() throws {
        var attempt = DeliveryAttempt(Self.claimed())
        let (first, _, _) = try #require(Self.finished(attempt.next(after: Self.answer(503, "ServiceUnavailable"), now: Self.now, jitter: 0)))
        #expect(first.state == .queued && first.retried && first.notBefore == Self.now.addingMilliseconds(750))
        var second = DeliveryAttempt(Self.claimed(retries: 1))
        let (later, _, _) = try #require(Self.finished(second.next(after: Self.answer(500), now: Self.now, jitter: 0.999)))
        #expect(later.state == .queued && later.notBefore! == Self.now.addingMilliseconds(2499))  // 2 s + 25% (almost)
        var limited = DeliveryAttempt(Self.claimed())
        let (honoured, _, _) = try #require(Self.finished(limited.next(after: Self.answer(429, "TooManyRequests", retryAfter: .seconds(30)),
                                                                      now: Self.now, jitter: 0.5)))
        #expect(honoured.notBefore == Self.now.adding(seconds: 30))
    }

    @Test func theThirdRetryableClaimFailsAndOnePastExpirationExpires() throws {
        var last = DeliveryAttempt(Self.claimed(retries: 2))
        let (failed, _, _) = try #require(Self.finished(last.next(after: Self.answer(503, "ServiceUnavailable"), now: Self.now, jitter: 0.5)))
        #expect(failed.state == .failed && failed.reason == "ServiceUnavailable" && failed.status == 503)
        var late = DeliveryAttempt(Self.claimed(expiration: Self.now.addingMilliseconds(500)))
        let (expired, _, _) = try #require(Self.finished(late.next(after: Self.answer(429, "TooManyRequests"), now: Self.now, jitter: 0.5)))
        #expect(expired.state == .expired && expired.reason == "TooManyRequests")
    }

    @Test func notSentIsRetriedAndNotCountedAsARequest() throws {
        var attempt = DeliveryAttempt(Self.claimed())
        let (settlement, _, _) = try #require(Self.finished(attempt.next(after: .notSent("connection refused"), now: Self.now, jitter: 0.5)))
        #expect(settlement.state == .queued && settlement.requests == 0 && settlement.retried)
    }

    @Test func uncertainOutcomesAreUnknownAndNeverRetried() throws {
        var attempt = DeliveryAttempt(Self.claimed())
        let (settlement, effect, _) = try #require(Self.finished(attempt.next(after: .uncertain("timeout"), now: Self.now, jitter: 0.5)))
        #expect(settlement.state == .unknown && settlement.notBefore == nil && effect == nil)
    }

    @Test func expiredProviderTokenRenewsOnceThenIsAConfigurationProblem() throws {
        var attempt = DeliveryAttempt(Self.claimed())
        #expect(attempt.next(after: Self.answer(403, "ExpiredProviderToken"), now: Self.now, jitter: 0.5)
                    == .renewProviderTokenAndSend(.production))
        let (settlement, effect, problem) = try #require(Self.finished(attempt.next(after: Self.answer(403, "ExpiredProviderToken"),
                                                                                   now: Self.now, jitter: 0.5)))
        #expect(settlement.state == .failed && problem && effect == nil && settlement.requests == 2)
    }

    @Test func configurationAndOtherClientErrorsFailAndKeepTheToken() throws {
        for reason in ["InvalidProviderToken", "BadEnvironmentKeyInToken", "BadTopic", "TopicDisallowed"] {
            var attempt = DeliveryAttempt(Self.claimed())
            let (settlement, effect, problem) = try #require(Self.finished(attempt.next(after: Self.answer(reason == "BadTopic" ? 400 : 403, reason),
                                                                                       now: Self.now, jitter: 0.5)))
            #expect(settlement.state == .failed && settlement.reason == reason && problem && effect == nil)
        }
        var other = DeliveryAttempt(Self.claimed())
        let (settlement, effect, problem) = try #require(Self.finished(other.next(after: Self.answer(400, "DeviceTokenNotForTopic"),
                                                                                 now: Self.now, jitter: 0.5)))
        #expect(settlement.state == .failed && !problem && effect == nil)
    }
}

extension Timestamp {
    func addingMilliseconds(_ ms: Int64) -> Timestamp { Timestamp(milliseconds: milliseconds + ms) }
}

/// `APNsAttempt` then `DeliveryRules`, one step at a time, as
/// `APNsProvider` and the sender drive them.
struct DeliveryAttempt {
    enum Step: Hashable {
        case send(APNsEnvironment)
        case renewProviderTokenAndSend(APNsEnvironment)
        case finish(DeliverySettlement, effect: DeliveryEffect?, configurationProblem: Bool)
    }

    let claimed: ClaimedDelivery
    var apns: APNsAttempt

    init(_ claimed: ClaimedDelivery) {
        self.claimed = claimed
        apns = APNsAttempt(storedEnvironment: claimed.delivery.environment)
    }

    mutating func next(after result: APNsResult, now: Timestamp, jitter: Double) -> Step {
        switch apns.next(after: result, apnsId: claimed.delivery.apnsId) {
        case .send(let environment): return .send(environment)
        case .renewProviderTokenAndSend(let environment): return .renewProviderTokenAndSend(environment)
        case .finish(let outcome):
            let decision = DeliveryRules.decide(outcome, for: claimed, now: now, jitter: jitter)
            return .finish(decision.settlement, effect: decision.effect, configurationProblem: decision.configurationProblem)
        }
    }
}
