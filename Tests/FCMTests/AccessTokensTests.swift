import APNsTestSupport
import FCM
import Foundation
import HTTP2
import JSON
import RegistrydTestSupport
import Synchronization
import Testing

/// The OAuth 2.0 access tokens of one service account against the token
/// endpoint of `tools/fake-fcm`: one fetch for many callers, renewal ahead
/// of expiry, a refused token dropped (only that one), and the endpoint's
/// refusals and failures told apart.
@Suite(.enabled(if: FakeFCM.available, "needs /usr/bin/python3 with h2 and cryptography (tools/install-deps --test)"))
struct AccessTokensTests {
    /// Seconds since 1970 that a test moves by hand.
    final class Clock: Sendable {
        private let seconds: Mutex<Int64>
        init() { seconds = Mutex(Int64(Date().timeIntervalSince1970)) }
        var now: Int64 { seconds.withLock { $0 } }
        func advance(to offset: Int64, from start: Int64) { seconds.withLock { $0 = start + offset } }
    }

    /// A running fake, a started client trusting its CA, and the account's tokens.
    struct Setup {
        let fake: FakeFCM
        let client: HTTP2Client
        let tokens: AccessTokens

        func stop() async {
            let client = client
            await offThePool { client.stop() }
            await fake.stop()
        }
    }

    static func setUp(script: String = "{}", tokenLifetime: Int = 3600, requestTimeout: Duration = .seconds(5),
                      now: (@Sendable () -> Int64)? = nil) async throws -> Setup {
        let fake = try await FakeFCM.start(script: script, tokenLifetime: tokenLifetime)
        let client = try HTTP2Client(configuration: HTTP2ClientConfiguration(name: "fcm", caFile: fake.caFile, requestTimeout: requestTimeout))
        client.start()
        let account = try ServiceAccount(contentsOf: fake.serviceAccountFile)
        let url = try TokenURL.parse(fake.tokenURL).get()
        let tokens = if let now { AccessTokens(account: account, tokenURL: url, http: client, now: now) }
                     else { AccessTokens(account: account, tokenURL: url, http: client) }
        return Setup(fake: fake, client: client, tokens: tokens)
    }

    /// Sends one message with `token` as the bearer; FCM's status.
    static func send(_ setup: Setup, bearer: String) async -> Int? {
        let request = HTTP2Request(origin: setup.fake.baseURL, path: "/v1/projects/\(setup.fake.projectId)/messages:send",
                                   headers: ["content-type: application/json"], authorization: { "Bearer " + bearer },
                                   body: Array(#"{"message":{"token":"marker"}}"#.utf8))
        guard case .answered(let response) = await setup.client.send(request) else { return nil }
        return response.status
    }

    /// Every record the fake logged up to the send of `marker` (a later
    /// record is flushed after every earlier one).
    static func logThroughMarker(_ fake: FakeFCM) async throws -> [JSONObject] {
        let sends = try await fake.log(count: 1, endpoint: "send")
        try #require(sends.contains { $0["token"] == .string("marker") })
        return try await fake.log(count: 0)
    }

    static func tokenLines(_ log: [JSONObject]) -> Int { log.filter { $0["endpoint"] == .string("token") }.count }

    @Test func concurrentCallersShareOneFetch() async throws {
        let setup = try await Self.setUp()
        let tokens = setup.tokens
        let results = await withTaskGroup(of: Result<String, AccessTokens.Failure>.self) { group in
            for _ in 0..<20 { group.addTask { await tokens.current() } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let issued = Set(results.compactMap { try? $0.get() })
        #expect(results.count == 20 && issued.count == 1, "\(results)")
        // The token works, and the fake issued exactly one.
        let token = try #require(issued.first)
        #expect(await Self.send(setup, bearer: token) == 200)
        #expect(Self.tokenLines(try await Self.logThroughMarker(setup.fake)) == 1)
        #expect(tokens.renewals == 0)
        await setup.stop()
    }

    @Test func theTokenIsRenewedWhenAFifthOfItsLifetimeIsLeft() async throws {
        let clock = Clock()
        let start = clock.now
        let setup = try await Self.setUp(tokenLifetime: 100, now: { clock.now })
        let first = try await setup.tokens.current().get()
        // 100 s tokens are renewed min(300, 100 / 5) = 20 s before they expire, at iat + 80.
        clock.advance(to: 75, from: start)
        #expect(try await setup.tokens.current().get() == first)
        clock.advance(to: 79, from: start)
        #expect(try await setup.tokens.current().get() == first)
        clock.advance(to: 81, from: start)
        let second = try await setup.tokens.current().get()
        #expect(second != first && setup.tokens.renewals == 1)
        #expect(try await setup.tokens.current().get() == second)
        #expect(await Self.send(setup, bearer: second) == 200)
        #expect(Self.tokenLines(try await Self.logThroughMarker(setup.fake)) == 2)
        await setup.stop()
    }

    @Test func aRefusedTokenIsDroppedButAnOlderOneDropsNothing() async throws {
        let setup = try await Self.setUp()
        let first = try await setup.tokens.current().get()
        setup.tokens.refused(first)
        let second = try await setup.tokens.current().get()
        #expect(second != first && setup.tokens.renewals == 1)
        // A request that carried the old token is refused late: the new one stays.
        setup.tokens.refused(first)
        #expect(try await setup.tokens.current().get() == second)
        #expect(await Self.send(setup, bearer: second) == 200)
        #expect(Self.tokenLines(try await Self.logThroughMarker(setup.fake)) == 2)
        await setup.stop()
    }

    @Test func aRefusedGrantIsARefusalNamingTheError() async throws {
        let setup = try await Self.setUp(script: #"""
            {"token_endpoint": [{"status": 400, "error": "invalid_grant", "description": "Invalid JWT Signature."}]}
            """#)
        let result = await setup.tokens.current()
        guard case .failure(.refused(let why)) = result else {
            Issue.record("\(result)")
            await setup.stop()
            return
        }
        #expect(why.contains("invalid_grant") && why.contains("Invalid JWT Signature.") && why.contains("400"), "\(why)")
        await setup.stop()
    }

    @Test func aServerErrorIsUnavailableAndNotRemembered() async throws {
        let setup = try await Self.setUp(script: #"{"token_endpoint": [{"status": 500}, {"status": 200}]}"#)
        let result = await setup.tokens.current()
        guard case .failure(.unavailable(let why)) = result else {
            Issue.record("\(result)")
            await setup.stop()
            return
        }
        #expect(why.contains("500"), "\(why)")
        // The next caller fetches again, and gets one.
        let token = try await setup.tokens.current().get()
        #expect(await Self.send(setup, bearer: token) == 200)
        await setup.stop()
    }

    @Test
    func failedFetchesAreNotRenewals() async throws {
        // What registry_provider_credential_renewals_total{provider="fcm"} counts: tokens fetched after the first.
        let setup = try await Self.setUp(script: #"""
            {"token_endpoint": [{"status": 400, "error": "invalid_grant"}, {"status": 503}, {"status": 200}]}
            """#)
        await #expect(throws: AccessTokens.Failure.self) { try await setup.tokens.current().get() }
        await #expect(throws: AccessTokens.Failure.self) { try await setup.tokens.current().get() }
        let first = try await setup.tokens.current().get()
        #expect(setup.tokens.renewals == 0, "no token was renewed: the first one was only just issued")
        setup.tokens.refused(first)
        _ = try await setup.tokens.current().get()
        #expect(setup.tokens.renewals == 1)
        await setup.stop()
    }

    @Test func concurrentRefusalsOfOneTokenRenewItOnce() async throws {
        let setup = try await Self.setUp()
        let tokens = setup.tokens
        let first = try await tokens.current().get()
        // Every request that carried the refused token reports it; one new token serves them all.
        let renewed = await withTaskGroup(of: Result<String, AccessTokens.Failure>.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    tokens.refused(first)
                    return await tokens.current()
                }
            }
            return await group.reduce(into: Set<String>()) { if case .success(let token) = $1 { $0.insert(token) } }
        }
        #expect(renewed.count == 1 && !renewed.contains(first) && tokens.renewals == 1, "\(renewed)")
        let second = try #require(renewed.first)
        #expect(await Self.send(setup, bearer: second) == 200)
        #expect(Self.tokenLines(try await Self.logThroughMarker(setup.fake)) == 2)
        await setup.stop()
    }

    @Test func noAnswerFromTheEndpointIsUnavailable() async throws {
        let setup = try await Self.setUp(script: #"{"token_endpoint": [{"action": "stall"}]}"#, requestTimeout: .seconds(1))
        let result = await setup.tokens.current()
        guard case .failure(.unavailable) = result else {
            Issue.record("\(result)")
            await setup.stop()
            return
        }
        await setup.stop()
    }
}
