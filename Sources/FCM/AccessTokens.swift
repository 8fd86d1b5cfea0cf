import Codecs
import Foundation
import HTTP2
import JSON
import JWT
import Synchronization

/// The OAuth 2.0 access token of one service account (RFC 7523's JWT
/// bearer grant), shared by every request of every connection.
///
/// A token is fetched when none is held, renewed ahead of its expiry (when
/// less than the smaller of 5 minutes and a fifth of its `expires_in` is
/// left), and dropped when FCM refuses it (`refused`). One fetch at a time:
/// callers that need a token while one is being fetched wait for it.
package final class AccessTokens: Sendable {
    /// FCM's scope.
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// An assertion's lifetime (Google accepts at most an hour).
    static let assertionLifetime: Int64 = 3600

    /// Why no token could be had.
    package enum Failure: Error, Hashable {
        /// The endpoint refused the grant (4xx: `invalid_grant`, a revoked
        /// key): the operator's to fix; never retried by itself.
        case refused(String)
        /// No answer, or a 5xx: the FCM request was not sent and may be.
        case unavailable(String)
    }

    private struct Issued {
        var token: String
        /// When `current` fetches another: ahead of expiry by the margin.
        var renewAt: Int64
    }

    private struct State {
        var issued: Issued?
        /// Callers waiting for the fetch in progress (`nil`: none in progress).
        var waiters: [CheckedContinuation<Result<String, Failure>, Never>]?
        var fetches = 0
    }

    package let account: ServiceAccount
    package let tokenURL: TokenURL
    private let http: HTTP2Client
    private let now: @Sendable () -> Int64
    private let state = Mutex(State())

    package init(account: ServiceAccount, tokenURL: TokenURL, http: HTTP2Client,
         now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }) {
        self.account = account
        self.tokenURL = tokenURL
        self.http = http
        self.now = now
    }

    /// Access tokens fetched after the first.
    package var renewals: Int { state.withLock { max(0, $0.fetches - 1) } }

    /// The token to send now: the held one while it is fresh, else a new one.
    package func current() async -> Result<String, Failure> {
        let time = now()
        enum Decision { case have(String), wait, fetch }
        return await withCheckedContinuation { continuation in
            let decision = state.withLock { state -> Decision in
                if let issued = state.issued, time < issued.renewAt { return .have(issued.token) }
                if state.waiters != nil {
                    state.waiters!.append(continuation)
                    return .wait
                }
                state.waiters = [continuation]
                return .fetch
            }
            switch decision {
            case .have(let token): continuation.resume(returning: .success(token))
            case .wait: break
            case .fetch: Task { await self.fetchForWaiters() }
            }
        }
    }

    /// FCM answered 401 without an FcmError to a request that carried
    /// `token`: drop it if it is still the held one, so the next `current`
    /// fetches another.
    package func refused(_ token: String) {
        state.withLock { state in
            if state.issued?.token == token { state.issued = nil }
        }
    }

    private func fetchForWaiters() async {
        let result = await fetch()
        let waiters = state.withLock { state -> [CheckedContinuation<Result<String, Failure>, Never>] in
            // Only a token issued counts: a refused or failed fetch is no renewal.
            if case .success(let issued) = result {
                state.issued = issued
                state.fetches += 1
            }
            defer { state.waiters = nil }
            return state.waiters ?? []
        }
        let answer = result.map(\.token)
        for waiter in waiters { waiter.resume(returning: answer) }
    }

    private func fetch() async -> Result<Issued, Failure> {
        let issuedAt = now()
        guard let assertion = assertion(issuedAt: issuedAt) else {
            return .failure(.unavailable("the service account's key could not sign an assertion"))
        }
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion
        let request = HTTP2Request(origin: tokenURL.origin, path: tokenURL.path,
                                   headers: ["content-type: application/x-www-form-urlencoded", "accept: application/json"],
                                   body: Array(form.utf8))
        switch await http.send(request) {
        case .notSent(let why), .refused(let why), .uncertain(let why):
            return .failure(.unavailable("token endpoint \(tokenURL.url): \(why)"))
        case .answered(let response):
            return issued(from: response, at: issuedAt)
        }
    }

    private func issued(from response: HTTP2Response, at issuedAt: Int64) -> Result<Issued, Failure> {
        let object: JSONObject? = if case .object(let o)? = try? JSONParser.parse(response.body) { o } else { nil }
        guard response.status == 200 else {
            var detail = "token endpoint \(tokenURL.url) answered \(response.status)"
            if case .string(let error)? = object?["error"] { detail += " \(error)" }
            if case .string(let description)? = object?["error_description"] { detail += ": \(description)" }
            return (400..<500).contains(response.status) ? .failure(.refused(detail)) : .failure(.unavailable(detail))
        }
        guard case .string(let token)? = object?["access_token"], !token.isEmpty,
              token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
              let lifetime = object?["expires_in"]?.exactInt64, lifetime > 0 else {
            return .failure(.unavailable("token endpoint \(tokenURL.url) answered 200 without access_token and expires_in"))
        }
        let margin = min(300, lifetime / 5)
        return .success(Issued(token: token, renewAt: issuedAt + lifetime - margin))
    }

    /// The RS256 JWT of the grant: `kid` = `private_key_id`; `iss` =
    /// `client_email`, `scope`, `aud` = the token URL, `iat`, `exp`.
    private func assertion(issuedAt: Int64) -> String? {
        JWTSigner.sign(header: [("kid", .string(account.privateKeyId)), ("typ", .string("JWT"))],
                       claims: [("iss", .string(account.clientEmail)), ("scope", .string(Self.scope)),
                                ("aud", .string(tokenURL.url)), ("iat", .int(issuedAt)),
                                ("exp", .int(issuedAt + Self.assertionLifetime))],
                       key: account.key)
    }
}
