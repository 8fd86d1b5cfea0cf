import RegistryCore

/// FCM's rules within one claim of one delivery (docs/delivery.md "FCM's
/// answers"), as a state machine `FCMProvider` drives: it sends, reports
/// the answer, and does what `next` says until it says `finish`. At most
/// two requests: the first, and one more with a renewed access token after
/// a 401 that refused the token (not counted toward the retries across
/// claims; counted in `attempts`).
package struct FCMAttempt {
    package enum Step: Hashable {
        /// Drop the access token the request carried, fetch another, send again.
        case renewAccessTokenAndSend
        case finish(ProviderOutcome)
    }

    /// Codes that blame the sender's credentials or project, not the token.
    package static let configurationCodes: Set<String> = ["SENDER_ID_MISMATCH", "THIRD_PARTY_AUTH_ERROR", "PERMISSION_DENIED"]
    /// FCM's guidance: a 429 without Retry-After waits at least a minute.
    package static let quotaWait: Duration = .seconds(60)

    package private(set) var requests = 0
    private var renewedAccessToken = false

    package init() {}

    /// `sentAt`: when the request was sent. A removal spares a token set
    /// after it (the guard removes what was set strictly before the guard
    /// time, so the guard is the millisecond after the send: a token set in
    /// the millisecond the request went out is the one it carried).
    package mutating func next(after answer: FCMAnswer, sentAt: Timestamp) -> Step {
        requests += 1
        let guardTime = sentAt.adding(.milliseconds(1))
        let status = answer.status
        let retryAfter = answer.retryAfter.map { Duration.seconds($0) }
        switch status {
        case 200:
            return finish(.delivered(messageId: answer.name, correctedEnvironment: nil), status, nil)
        case 404 where answer.fcmError == "UNREGISTERED":
            return finish(.removeToken(.unregistered, registeredBefore: guardTime), status, "Unregistered")
        case 400 where answer.isInvalidToken:
            return finish(.removeToken(.invalidToken, registeredBefore: guardTime), status, "InvalidToken")
        case 401 where answer.fcmError == nil:
            // The access token was refused (not an FcmError): renew once.
            if !renewedAccessToken {
                renewedAccessToken = true
                return .renewAccessTokenAndSend
            }
            return finish(.configurationProblem, status, "UNAUTHENTICATED")
        case 403, 401:
            return finish(.configurationProblem, status, answer.fcmError ?? answer.errorStatus ?? "PERMISSION_DENIED")
        case 429:
            return finish(.retry(after: retryAfter ?? Self.quotaWait), status, answer.code ?? "QUOTA_EXCEEDED")
        case 500, 503:
            return finish(.retry(after: retryAfter), status, answer.code ?? (status == 500 ? "INTERNAL" : "UNAVAILABLE"))
        case 502, 504:
            // A gateway (Google's front end, a proxy) took the request and
            // lost track of it behind it: it may have been sent, so never again.
            return finish(.unknown, status, answer.code ?? (status == 502 ? "BAD_GATEWAY" : "GATEWAY_TIMEOUT"))
        default:
            return finish(.failed, status, answer.message ?? answer.code)
        }
    }

    /// The request was certainly not written: a later claim may send it.
    package mutating func notSent(_ why: String) -> ProviderOutcome {
        ProviderOutcome(.retry(after: nil), reason: why, requests: requests)
    }

    /// The request may have reached FCM: never sent again.
    package mutating func uncertain(_ why: String) -> ProviderOutcome {
        requests += 1
        return ProviderOutcome(.unknown, reason: why, requests: requests)
    }

    private func finish(_ verdict: ProviderOutcome.Verdict, _ status: Int, _ reason: String?) -> Step {
        .finish(ProviderOutcome(verdict, status: status, reason: reason, requests: requests))
    }
}
