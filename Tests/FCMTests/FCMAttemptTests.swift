import FCM
import RegistryCore
import Testing

/// The API's table of FCM's answers (docs/API.md "FCM's answers"), one row
/// at a time through `FCMAttempt`, then what the sender makes of the
/// outcome across claims (`DeliveryRules`), without a network.
@Suite struct FCMAttemptTests {
    typealias F = FCMFixtures
    static let sentAt = Timestamp(milliseconds: 1_800_000_000_000)

    static let unauthenticated = F.answer(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")

    /// The outcome a finishing step carries, or `nil` (a renewal).
    static func outcome(_ step: FCMAttempt.Step) -> ProviderOutcome? {
        guard case .finish(let outcome) = step else { return nil }
        return outcome
    }

    /// One answer to a fresh attempt; its outcome.
    static func first(_ answer: FCMAnswer) throws -> ProviderOutcome {
        var attempt = FCMAttempt()
        return try #require(outcome(attempt.next(after: answer, sentAt: sentAt)))
    }

    /// A removal's guard time: the store removes a token last set strictly
    /// before it, so the token set in the millisecond the request went out
    /// (the one it carried) is removed, and one set after the send is spared.
    static func guardsTheSend(_ verdict: ProviderOutcome.Verdict, _ reason: FeedbackReason) -> Bool {
        guard case .removeToken(reason, let before?) = verdict else { return false }
        return sentAt < before && before <= sentAt.adding(.milliseconds(1))
    }

    // MARK: - One claim

    @Test func okIsDeliveredWithFCMsName() throws {
        let name = "projects/registry-test/messages/0:1800000000000000%31bd1c9631bd1c96"
        let outcome = try Self.first(FCMAnswer(status: 200, body: Array(#"{"name": "\#(name)"}"#.utf8), retryAfter: nil))
        #expect(outcome == ProviderOutcome(.delivered(messageId: name, correctedEnvironment: nil), status: 200, requests: 1))
    }

    @Test func unregisteredRemovesTheTokenGuardedByTheSend() throws {
        let outcome = try Self.first(F.answer(404, "NOT_FOUND", "Requested entity was not found.", fcmError: "UNREGISTERED"))
        #expect(Self.guardsTheSend(outcome.verdict, .unregistered), "\(outcome.verdict)")
        #expect(outcome.status == 404 && outcome.reason == "Unregistered" && outcome.requests == 1)
    }

    @Test func anInvalidTokenIsRemovedAsInvalidToken() throws {
        let answers = [F.answer(400, "INVALID_ARGUMENT", "Invalid registration token", fcmError: "INVALID_ARGUMENT", violation: "message.token"),
                       F.answer(400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token",
                                fcmError: "INVALID_ARGUMENT")]
        for answer in answers {
            let outcome = try Self.first(answer)
            #expect(Self.guardsTheSend(outcome.verdict, .invalidToken), "\(outcome.verdict)")
            #expect(outcome.status == 400 && outcome.reason == "InvalidToken" && outcome.requests == 1)
        }
    }

    @Test func anotherInvalidArgumentFailsWithFCMsMessageAndKeepsTheToken() throws {
        let message = #"Invalid value at 'message.data[0].value' (TYPE_STRING), 5"#
        let outcome = try Self.first(F.answer(400, "INVALID_ARGUMENT", message, fcmError: "INVALID_ARGUMENT",
                                              violation: "message.data[0].value"))
        #expect(outcome == ProviderOutcome(.failed, status: 400, reason: message, requests: 1))
    }

    @Test func theSendersCredentialsOrProjectRefusedAreConfigurationProblems() throws {
        let cases: [(FCMAnswer, String)] = [
            (F.answer(403, "PERMISSION_DENIED", "SenderId mismatch", fcmError: "SENDER_ID_MISMATCH"), "SENDER_ID_MISMATCH"),
            (F.answer(403, "PERMISSION_DENIED", "The caller does not have permission"), "PERMISSION_DENIED"),
            (FCMAnswer(status: 403, body: Array("Forbidden".utf8), retryAfter: nil), "PERMISSION_DENIED"),
            (F.answer(401, "UNAUTHENTICATED", "Auth error from APNS or Web Push Service", fcmError: "THIRD_PARTY_AUTH_ERROR"),
             "THIRD_PARTY_AUTH_ERROR"),
        ]
        for (answer, reason) in cases {
            var attempt = FCMAttempt()
            // Never a renewal: THIRD_PARTY_AUTH_ERROR is about the app's APNs credentials in Firebase, not the access token.
            let step = attempt.next(after: answer, sentAt: Self.sentAt)
            #expect(step == .finish(ProviderOutcome(.configurationProblem, status: answer.status, reason: reason, requests: 1)))
        }
    }

    @Test func aRefusedAccessTokenIsRenewedOnceThenIsAConfigurationProblem() {
        var attempt = FCMAttempt()
        #expect(attempt.next(after: Self.unauthenticated, sentAt: Self.sentAt) == .renewAccessTokenAndSend)
        #expect(attempt.requests == 1)
        #expect(attempt.next(after: Self.unauthenticated, sentAt: Self.sentAt)
                    == .finish(ProviderOutcome(.configurationProblem, status: 401, reason: "UNAUTHENTICATED", requests: 2)))
        // A body that is no JSON at all is a refused token too (no FcmError).
        var bare = FCMAttempt()
        #expect(bare.next(after: FCMAnswer(status: 401, body: [], retryAfter: nil), sentAt: Self.sentAt) == .renewAccessTokenAndSend)
    }

    @Test func theRenewedRequestCountsInRequests() throws {
        var attempt = FCMAttempt()
        #expect(attempt.next(after: Self.unauthenticated, sentAt: Self.sentAt) == .renewAccessTokenAndSend)
        let outcome = try #require(Self.outcome(attempt.next(after: FCMAnswer(status: 200, body: Array(#"{"name":"m"}"#.utf8),
                                                                               retryAfter: nil), sentAt: Self.sentAt)))
        #expect(outcome == ProviderOutcome(.delivered(messageId: "m", correctedEnvironment: nil), status: 200, requests: 2))
    }

    @Test func otherClientErrorsFailWithTheStatusAndMessage() throws {
        let notFound = try Self.first(F.answer(404, "NOT_FOUND", "Requested entity was not found."))
        #expect(notFound == ProviderOutcome(.failed, status: 404, reason: "Requested entity was not found.", requests: 1))
        let tooLarge = try Self.first(F.answer(413, "INVALID_ARGUMENT", "Request payload size exceeds the limit: 1048576 bytes."))
        #expect(tooLarge == ProviderOutcome(.failed, status: 413, reason: "Request payload size exceeds the limit: 1048576 bytes.",
                                            requests: 1))
        // No message: the error's code stands for it.
        let conflict = try Self.first(FCMAnswer(status: 409, body: Array(#"{"error": {"code": 409, "status": "ABORTED"}}"#.utf8),
                                                retryAfter: nil))
        #expect(conflict == ProviderOutcome(.failed, status: 409, reason: "ABORTED", requests: 1))
    }

    @Test func quotaWaitsAMinuteUnlessRetryAfterSaysOtherwise() throws {
        let quota = try Self.first(F.answer(429, "RESOURCE_EXHAUSTED", "Quota exceeded for sending messages.", fcmError: "QUOTA_EXCEEDED"))
        #expect(quota == ProviderOutcome(.retry(after: .seconds(60)), status: 429, reason: "QUOTA_EXCEEDED", requests: 1))
        let told = try Self.first(F.answer(429, "RESOURCE_EXHAUSTED", "Quota exceeded for sending messages.", fcmError: "QUOTA_EXCEEDED",
                                           retryAfter: 5))
        #expect(told == ProviderOutcome(.retry(after: .seconds(5)), status: 429, reason: "QUOTA_EXCEEDED", requests: 1))
        // A bare 429 is still FCM's quota.
        let bare = try Self.first(FCMAnswer(status: 429, body: [], retryAfter: nil))
        #expect(bare.verdict == .retry(after: .seconds(60)) && bare.reason == "QUOTA_EXCEEDED")
    }

    @Test func serverErrorsAreRetriedHonouringRetryAfter() throws {
        let internalError = try Self.first(F.answer(500, "INTERNAL", "Internal error encountered.", fcmError: "INTERNAL"))
        #expect(internalError == ProviderOutcome(.retry(after: nil), status: 500, reason: "INTERNAL", requests: 1))
        let unavailable = try Self.first(F.answer(503, "UNAVAILABLE", "The service is currently unavailable.", fcmError: "UNAVAILABLE",
                                                  retryAfter: 10))
        #expect(unavailable == ProviderOutcome(.retry(after: .seconds(10)), status: 503, reason: "UNAVAILABLE", requests: 1))
        // A proxy's page instead of Google's JSON: the status names it.
        let page = try Self.first(FCMAnswer(status: 503, body: Array("<html>Service Unavailable</html>".utf8), retryAfter: nil))
        #expect(page == ProviderOutcome(.retry(after: nil), status: 503, reason: "UNAVAILABLE", requests: 1))
        #expect(try Self.first(FCMAnswer(status: 500, body: [], retryAfter: nil)).reason == "INTERNAL")
    }

    /// A gateway's 502 or 504 says the request got past Google's front end
    /// and its fate behind it is unknown: at most once, never sent again.
    @Test func aGatewaysErrorIsUnknown() throws {
        for status in [502, 504] {
            let page = try Self.first(FCMAnswer(status: status, body: Array("<html>Bad Gateway</html>".utf8), retryAfter: nil))
            #expect(page.verdict == .unknown, "\(status)")
            #expect(page.status == status && page.requests == 1)
        }
    }

    @Test func aRequestNeverWrittenIsRetriedAndNotCounted() {
        var attempt = FCMAttempt()
        #expect(attempt.notSent("connection refused") == ProviderOutcome(.retry(after: nil), reason: "connection refused", requests: 0))
        // After a renewal the first request stays counted, the unwritten second does not.
        var renewed = FCMAttempt()
        _ = renewed.next(after: Self.unauthenticated, sentAt: Self.sentAt)
        #expect(renewed.notSent("token endpoint unavailable") == ProviderOutcome(.retry(after: nil), reason: "token endpoint unavailable",
                                                                                   requests: 1))
    }

    @Test func aRequestThatMayHaveBeenWrittenIsUnknownAndCounted() {
        var attempt = FCMAttempt()
        #expect(attempt.uncertain("timeout") == ProviderOutcome(.unknown, reason: "timeout", requests: 1))
        var renewed = FCMAttempt()
        _ = renewed.next(after: Self.unauthenticated, sentAt: Self.sentAt)
        #expect(renewed.uncertain("connection lost") == ProviderOutcome(.unknown, reason: "connection lost", requests: 2))
    }

    // MARK: - Across claims (DeliveryRules)

    @Test func aQuotaAnswerQueuesTheDeliveryAMinuteLater() throws {
        let now = Self.sentAt
        let quota = try Self.first(F.answer(429, "RESOURCE_EXHAUSTED", "Quota exceeded for sending messages.", fcmError: "QUOTA_EXCEEDED"))
        for jitter in [0.0, 0.5, 0.999] {
            let decision = DeliveryRules.decide(quota, for: F.claimed(now: now), now: now, jitter: jitter)
            #expect(decision.settlement.state == .queued && decision.settlement.retried)
            #expect(try #require(decision.settlement.notBefore) >= now.adding(seconds: 60))
            #expect(decision.settlement.reason == "QUOTA_EXCEEDED" && decision.effect == nil && !decision.configurationProblem)
        }
        // The third retryable claim fails the delivery.
        let last = DeliveryRules.decide(quota, for: F.claimed(now: now, retries: 2), now: now, jitter: 0.5)
        #expect(last.settlement.state == .failed && last.settlement.reason == "QUOTA_EXCEEDED" && last.settlement.status == 429)
    }

    @Test func aRetryWhoseWaitEndsPastExpirationExpires() throws {
        let now = Self.sentAt
        let quota = try Self.first(F.answer(429, "RESOURCE_EXHAUSTED", "Quota exceeded for sending messages.", fcmError: "QUOTA_EXCEEDED"))
        let soon = DeliveryRules.decide(quota, for: F.claimed(now: now, expiration: now.adding(seconds: 30)), now: now, jitter: 0.5)
        #expect(soon.settlement.state == .expired && soon.settlement.notBefore == nil && soon.settlement.reason == "QUOTA_EXCEEDED")
        let unavailable = try Self.first(F.answer(503, "UNAVAILABLE", "The service is currently unavailable.", retryAfter: 120))
        let later = DeliveryRules.decide(unavailable, for: F.claimed(now: now, expiration: now.adding(seconds: 60)), now: now, jitter: 0.5)
        #expect(later.settlement.state == .expired)
    }

    @Test func theSenderAppliesRemovalsConfigurationProblemsAndMessageIds() throws {
        let now = Self.sentAt
        let claimed = F.claimed(now: now)
        let gone = try Self.first(F.answer(404, "NOT_FOUND", "Requested entity was not found.", fcmError: "UNREGISTERED"))
        let removal = DeliveryRules.decide(gone, for: claimed, now: now, jitter: 0.5)
        #expect(removal.settlement.state == .failed && removal.settlement.reason == "Unregistered")
        guard case .removeToken(.unregistered, let before)? = removal.effect, case .removeToken(_, let given) = gone.verdict else {
            Issue.record("\(String(describing: removal.effect))")
            return
        }
        #expect(before == given)
        let mismatch = try Self.first(F.answer(403, "PERMISSION_DENIED", "SenderId mismatch", fcmError: "SENDER_ID_MISMATCH"))
        let problem = DeliveryRules.decide(mismatch, for: claimed, now: now, jitter: 0.5)
        #expect(problem.settlement.state == .failed && problem.configurationProblem && problem.effect == nil)
        let ok = try Self.first(FCMAnswer(status: 200, body: Array(#"{"name":"projects/p/messages/1"}"#.utf8), retryAfter: nil))
        let delivered = DeliveryRules.decide(ok, for: claimed, now: now, jitter: 0.5)
        #expect(delivered.settlement.state == .delivered && delivered.settlement.messageId == "projects/p/messages/1")
        let timeout = DeliveryRules.decide(FCMAttempt().uncertainCopy("timeout"), for: claimed, now: now, jitter: 0.5)
        #expect(timeout.settlement.state == .unknown && timeout.settlement.notBefore == nil && timeout.settlement.requests == 1)
    }
}

private extension FCMAttempt {
    /// `uncertain` on a copy (it is mutating), for expressions.
    func uncertainCopy(_ why: String) -> ProviderOutcome {
        var copy = self
        return copy.uncertain(why)
    }
}
