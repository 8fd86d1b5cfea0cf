import APNsTestSupport
import FCM
import JSON
import RegistryCore
import RegistrydTestSupport
import Testing

/// `FCMProvider` behind the delivery seam against `tools/fake-fcm`: what it
/// sends, FCM's real answers through its rules, the access token renewed
/// once when refused (and only then), the token endpoint's refusal, a
/// request that may have been written, and the deliveries it must fail
/// without sending.
@Suite(.enabled(if: FakeFCM.available, "needs /usr/bin/python3 with h2 and cryptography (tools/install-deps --test)"))
struct FCMProviderTests {
    typealias F = FCMFixtures

    struct FixedClock: WallClock {
        let at: Timestamp
        func now() -> Timestamp { at }
    }

    struct Setup {
        let fake: FakeFCM
        let provider: FCMProvider

        func stop() async {
            let provider = provider
            await offThePool { provider.stop(grace: .seconds(1)) }
            await fake.stop()
        }

        /// Every record the fake logged once `sends` sends are in the log.
        func log(sends: Int) async throws -> [JSONObject] {
            _ = try await fake.log(count: sends, endpoint: "send")
            return try await fake.log(count: 0)
        }
    }

    static func setUp(script: String = "{}", apps: [String] = ["default"], requestTimeout: Duration = .seconds(5),
                      clock: any WallClock = SystemClock()) async throws -> Setup {
        let fake = try await FakeFCM.start(script: script)
        let account = try ServiceAccount(contentsOf: fake.serviceAccountFile)
        let configuration = FCMConfiguration(fcmURL: fake.baseURL, tokenURL: fake.tokenURL, caFile: fake.caFile,
                                             requestTimeout: requestTimeout)
        let provider = try FCMProvider(configuration: configuration,
                                       accounts: Dictionary(uniqueKeysWithValues: apps.map { ($0, account) }), clock: clock)
        try provider.start()
        return Setup(fake: fake, provider: provider)
    }

    static func records(_ log: [JSONObject], _ endpoint: String) -> [JSONObject] {
        log.filter { $0["endpoint"] == .string(endpoint) }
    }

    static func object(_ value: JSONValue?) -> JSONObject? {
        guard case .object(let object)? = value else { return nil }
        return object
    }

    @Test func aMessageCarriesTheTokenTheCallersMembersAndATTLAndIsDelivered() async throws {
        let setup = try await Self.setUp()
        let observer = RecordingObserver()
        let outcome = await setup.provider.send(F.claimed(token: "pixel-1"), observer: observer)
        guard case .delivered(let name?, .none) = outcome.verdict else {
            Issue.record("\(outcome)")
            await setup.stop()
            return
        }
        #expect(name.hasPrefix("projects/\(FakeFCM.projectId)/messages/0:"), "\(name)")
        #expect(outcome.status == 200 && outcome.requests == 1)
        #expect(observer.requests == [ReportedRequest(provider: .fcm, status: 200, reason: nil, outcome: "answered")])
        let send = try #require(Self.records(try await setup.log(sends: 1), "send").first)
        #expect(send["project"] == .string(FakeFCM.projectId) && send["status"] == .number("200") && send["http"] == .string("2"))
        let message = try #require(Self.object(send["message"]))
        #expect(message["token"] == .string("pixel-1"))
        #expect(Self.object(message["data"])?["k"] == .string("v"))
        guard case .string(let ttl)? = Self.object(message["android"])?["ttl"], ttl.hasSuffix("s"),
              let seconds = Int(ttl.dropLast()) else {
            Issue.record("android: \(String(describing: message["android"]))")
            await setup.stop()
            return
        }
        #expect((3000...3600).contains(seconds), "\(ttl)")  // an hour to expiration, less the time the test took
        await setup.stop()
    }

    @Test func fcmsErrorBodiesReachTheRules() async throws {
        let sentAt = SystemClock().now()
        let setup = try await Self.setUp(script: """
            {"tokens": {"gone": [{"error": "UNREGISTERED"}], "bad": [{"error": "INVALID_TOKEN"}],
                        "busy": [{"error": "QUOTA_EXCEEDED", "retryAfter": 5}], "mismatch": [{"error": "SENDER_ID_MISMATCH"}],
                        "broken": [{"error": "INTERNAL"}]}}
            """, clock: FixedClock(at: sentAt))
        let observer = RecordingObserver()
        func send(_ token: String) async -> ProviderOutcome {
            await setup.provider.send(F.claimed(token: token, now: sentAt), observer: observer)
        }
        let guardTime = sentAt.adding(.milliseconds(1))  // see FCMAttemptTests.guardsTheSend
        #expect(await send("gone") == ProviderOutcome(.removeToken(.unregistered, registeredBefore: guardTime), status: 404,
                                                      reason: "Unregistered", requests: 1))
        #expect(await send("bad") == ProviderOutcome(.removeToken(.invalidToken, registeredBefore: guardTime), status: 400,
                                                     reason: "InvalidToken", requests: 1))
        #expect(await send("busy") == ProviderOutcome(.retry(after: .seconds(5)), status: 429, reason: "QUOTA_EXCEEDED", requests: 1))
        #expect(await send("mismatch") == ProviderOutcome(.configurationProblem, status: 403, reason: "SENDER_ID_MISMATCH", requests: 1))
        #expect(await send("broken") == ProviderOutcome(.retry(after: nil), status: 500, reason: "INTERNAL", requests: 1))
        #expect(observer.requests.map(\.reason) == ["UNREGISTERED", "INVALID_ARGUMENT", "QUOTA_EXCEEDED", "SENDER_ID_MISMATCH", "INTERNAL"])
        await setup.stop()
    }

    @Test func aRefusedAccessTokenIsRenewedOnceAndTheMessageSentAgain() async throws {
        let setup = try await Self.setUp(script: #"{"tokens": {"pixel-1": [{"action": "revoke_bearer"}, {"status": 200}]}}"#)
        let observer = RecordingObserver()
        let outcome = await setup.provider.send(F.claimed(token: "pixel-1"), observer: observer)
        guard case .delivered = outcome.verdict else {
            Issue.record("\(outcome)")
            await setup.stop()
            return
        }
        #expect(outcome.status == 200 && outcome.requests == 2)
        #expect(observer.requests.map(\.status) == [401, 200] && observer.requests.map(\.reason) == ["UNAUTHENTICATED", nil])
        let log = try await setup.log(sends: 2)
        #expect(Self.records(log, "token").count == 2 && Self.records(log, "send").count == 2)
        let bearers = Self.records(log, "send").map { $0["bearer"] }
        #expect(bearers.count == 2 && bearers[0] != bearers[1])
        #expect(setup.provider.credentialRenewals == 1)
        await setup.stop()
    }

    @Test func thirdPartyAuthErrorIsAConfigurationProblemWithoutARenewal() async throws {
        let setup = try await Self.setUp(script: #"{"tokens": {"pixel-1": [{"error": "THIRD_PARTY_AUTH_ERROR"}]}}"#)
        let outcome = await setup.provider.send(F.claimed(token: "pixel-1"), observer: RecordingObserver())
        #expect(outcome == ProviderOutcome(.configurationProblem, status: 401, reason: "THIRD_PARTY_AUTH_ERROR", requests: 1))
        let log = try await setup.log(sends: 1)
        #expect(Self.records(log, "token").count == 1 && Self.records(log, "send").count == 1)
        #expect(setup.provider.credentialRenewals == 0)
        await setup.stop()
    }

    @Test func aRefusedGrantFailsTheDeliveryWithoutSendingIt() async throws {
        let setup = try await Self.setUp(script: #"""
            {"token_endpoint": [{"status": 400, "error": "invalid_grant", "description": "Invalid JWT Signature."}]}
            """#)
        let observer = RecordingObserver()
        let outcome = await setup.provider.send(F.claimed(token: "pixel-1"), observer: observer)
        #expect(outcome.verdict == .configurationProblem && outcome.reason == "fcm_auth_failed" && outcome.requests == 0)
        #expect(outcome.status == nil && (outcome.detail ?? "").contains("invalid_grant"), "\(outcome)")
        #expect(observer.requests == [ReportedRequest(provider: .fcm, status: nil, reason: "fcm_auth_failed", outcome: "token_refused")])
        // The provider returned without sending: the log holds the token request, and nothing else will come.
        let tokenLines = try await setup.fake.log(count: 1, endpoint: "token")
        let log = try await setup.fake.log(count: 0)
        #expect(tokenLines.count == 1 && Self.records(log, "send").isEmpty)
        await setup.stop()
    }

    @Test func aRequestLeftUnansweredIsUnknown() async throws {
        let setup = try await Self.setUp(script: #"{"tokens": {"pixel-1": [{"action": "stall"}]}}"#, requestTimeout: .seconds(1))
        let observer = RecordingObserver()
        // Connect and fetch the access token first, so the 1 s timeout bears on the stalled request alone.
        let warm = await setup.provider.send(F.claimed(token: "warm-up"), observer: observer)
        guard case .delivered = warm.verdict else {
            Issue.record("warm-up: \(warm)")
            await setup.stop()
            return
        }
        let outcome = await setup.provider.send(F.claimed(token: "pixel-1"), observer: observer)
        #expect(outcome.verdict == .unknown && outcome.requests == 1 && outcome.status == nil, "\(outcome)")
        #expect(observer.requests.last == ReportedRequest(provider: .fcm, status: nil, reason: nil, outcome: "uncertain"))
        await setup.stop()
    }

    @Test func deliveriesItCannotSendFailWithoutARequest() async throws {
        let setup = try await Self.setUp()
        let observer = RecordingObserver()
        let elsewhere = await setup.provider.send(F.claimed(token: "pixel-1", appId: "com.example.other"), observer: observer)
        #expect(elsewhere == ProviderOutcome(.failed, reason: DeliveryReason.platformNotConfigured, requests: 0))
        let bodiless = await setup.provider.send(F.claimed(token: "pixel-2", fcm: nil), observer: observer)
        #expect(bodiless == ProviderOutcome(.failed, reason: DeliveryReason.noPayloadForPlatform, requests: 0))
        #expect(observer.requests.isEmpty)
        // A delivery it can send: the only request the fake saw, after the only token fetch.
        _ = await setup.provider.send(F.claimed(token: "pixel-3"), observer: observer)
        let log = try await setup.log(sends: 1)
        #expect(Self.records(log, "send").map { $0["token"] } == [.string("pixel-3")])
        #expect(Self.records(log, "token").count == 1)
        await setup.stop()
    }

    @Test func appsOfOneServiceAccountShareItsAccessToken() async throws {
        let setup = try await Self.setUp(apps: ["com.example.a", "com.example.b"])
        #expect(setup.provider.appIds == ["com.example.a", "com.example.b"])
        let observer = RecordingObserver()
        let a = await setup.provider.send(F.claimed(token: "pixel-a", appId: "com.example.a"), observer: observer)
        let b = await setup.provider.send(F.claimed(token: "pixel-b", appId: "com.example.b"), observer: observer)
        #expect(a.status == 200 && b.status == 200)
        let log = try await setup.log(sends: 2)
        #expect(Self.records(log, "token").count == 1 && Self.records(log, "send").count == 2)
        await setup.stop()
    }
}
