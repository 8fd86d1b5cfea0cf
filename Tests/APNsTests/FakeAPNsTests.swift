import APNs
import APNsTestSupport
import JSON
import RegistrydTestSupport
import Testing

/// Real HTTP/2 answers from `tools/fake-apns`.
@Suite(.enabled(if: FakeAPNs.available, "needs /usr/bin/python3 with h2 and cryptography (tools/install-deps --test)"))
struct FakeAPNsTests {
    @Test func answersAreParsed() async throws {
        let fake = try await FakeAPNs.start(script: """
            {"tokens": {"\(token("410"))": [{"status": 410, "reason": "Unregistered", "timestamp": 1700000000123}],
                        "\(token("429"))": [{"status": 429, "reason": "TooManyRequests", "retryAfter": 1}],
                        "\(token("400"))": [{"status": 400, "reason": "BadDeviceToken"}]}}
            """)
        let client = try APNsClient(configuration: fake.configuration(), tokens: fake.tokens())
        client.start()
        let ok = request(token("200"))
        async let okResult = client.send(ok)
        async let gone = client.send(request(token("410")))
        async let busy = client.send(request(token("429")))
        async let bad = client.send(request(token("400"), host: .sandbox))
        guard case .answered(let answer) = await okResult else { Issue.record("\(await okResult)"); return }
        #expect(answer.status == 200 && answer.apnsId == ok.apnsId && answer.reason == nil && answer.latency > 0)
        guard case .answered(let goneAnswer) = await gone else { Issue.record("\(await gone)"); return }
        #expect(goneAnswer.status == 410 && goneAnswer.reason == "Unregistered" && goneAnswer.timestamp == 1_700_000_000_123)
        guard case .answered(let busyAnswer) = await busy else { Issue.record("\(await busy)"); return }
        #expect(busyAnswer.status == 429 && busyAnswer.reason == "TooManyRequests" && busyAnswer.retryAfter == 1)
        guard case .answered(let badAnswer) = await bad else { Issue.record("\(await bad)"); return }
        #expect(badAnswer.status == 400 && badAnswer.reason == "BadDeviceToken")
        // Only the sandbox gives an apns-unique-id (Apple's delivery log).
        #expect(answer.uniqueId == nil && badAnswer.uniqueId?.count == 36)
        #expect(badAnswer.providerToken == answer.providerToken)
        let log = try await fake.log(count: 4)
        #expect(log.first { $0["token"] == .string(token("400")) }?["environment"] == .string("sandbox"))
        await offThePool { client.stop() }
        await fake.stop()
    }

    @Test func headersAreSentAsSpecified() async throws {
        let fake = try await FakeAPNs.start(script: #"{"tokens": {}}"#)
        let client = try APNsClient(configuration: fake.configuration(), tokens: fake.tokens())
        client.start()
        let collapsed = request(token("c1"), collapseId: "group-7")
        let plain = request(token("c2"))
        #expect(await client.send(collapsed).status == 200)
        #expect(await client.send(plain).status == 200)
        let log = try await fake.log(count: 2)
        let first = try #require(log.first { $0["token"] == .string(token("c1")) })
        #expect(first["apnsId"] == .string(collapsed.apnsId))
        #expect(first["topic"] == .string(FakeAPNs.topic))
        #expect(first["pushType"] == .string("alert"))
        #expect(first["priority"]?.exactInt64 == 10)
        #expect(first["expiration"]?.exactInt64 == 1_700_000_000)
        #expect(first["collapseId"] == .string("group-7"))
        #expect(first["jwtIat"]?.exactInt64 != nil)
        #expect(first["payload"] == .object(JSONObject(["aps": .object(JSONObject(["alert": .string("hi")]))])))
        let second = try #require(log.first { $0["token"] == .string(token("c2")) })
        #expect(second["collapseId"] == .null)
        await offThePool { client.stop() }
        await fake.stop()
    }

    @Test func streamsOfOneHostShareOneConnection() async throws {
        let fake = try await FakeAPNs.start(script: #"{"tokens": {}}"#)
        let client = try APNsClient(configuration: fake.configuration(), tokens: fake.tokens())
        client.start()
        let results = await withTaskGroup(of: APNsResult.self) { group in
            for index in 0..<200 { group.addTask { await client.send(request(token(String(index, radix: 16)))) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.allSatisfy { $0.status == 200 })
        let log = try await fake.log(count: 200)
        #expect(log.count == 200)
        #expect(Set(log.map { $0["connection"] }).count == 1)
        await offThePool { client.stop() }
        await fake.stop()
    }

    @Test func resetAndStallAreUncertain() async throws {
        let fake = try await FakeAPNs.start(script: """
            {"tokens": {"\(token("e1"))": [{"action": "reset"}], "\(token("e2"))": [{"action": "stall"}]}}
            """)
        let client = try APNsClient(configuration: fake.configuration(timeout: .seconds(1)), tokens: fake.tokens())
        client.start()
        async let reset = client.send(request(token("e1")))
        async let stalled = client.send(request(token("e2")))
        guard case .uncertain(let resetWhy) = await reset else { Issue.record("\(await reset)"); return }
        #expect(resetWhy.contains("curl error 92"))
        guard case .uncertain(let stallWhy) = await stalled else { Issue.record("\(await stalled)"); return }
        #expect(stallWhy.contains("no answer within"))
        await offThePool { client.stop() }
        await fake.stop()
    }

    /// RFC 9113 §8.7: a stream refused (RST_STREAM REFUSED_STREAM) or above
    /// a GOAWAY's last stream was not processed. Alone on its connection or
    /// among others, with the request body handed over or not, it is
    /// `refused`, never uncertain.
    @Test func refusedAndGoawayStreamsAreRefused() async throws {
        let fake = try await FakeAPNs.start(script: """
            {"tokens": {"\(token("9a"))": [{"action": "goaway"}, {"status": 200}],
                        "\(token("9b"))": [{"action": "refuse"}, {"status": 200}],
                        "\(token("9c"))": [{"status": 200, "delayMs": 300}],
                        "\(token("9d"))": [{"action": "goaway"}]}}
            """)
        let client = try APNsClient(configuration: fake.configuration(timeout: .seconds(2)), tokens: fake.tokens())
        client.start()
        for (suffix, action) in [("9a", "goaway"), ("9b", "refuse")] {
            let result = await client.send(request(token(suffix)))
            guard case .refused = result else { Issue.record("\(action) alone: \(result)"); continue }
            #expect(await client.send(request(token(suffix))).status == 200)
        }
        // A GOAWAY while another stream is in flight below it (which the fake, closing at once, leaves unanswered).
        async let slow = client.send(request(token("9c")))
        try await Task.sleep(for: .milliseconds(100))
        let refused = await client.send(request(token("9d")))
        guard case .refused = refused else { Issue.record("goaway among others: \(refused)"); return }
        _ = await slow
        await offThePool { client.stop() }
        await fake.stop()
    }

    @Test func stopCompletesAStalledStreamAsUncertain() async throws {
        let fake = try await FakeAPNs.start(script: #"{"tokens": {"\#(token("5a"))": [{"action": "stall"}]}}"#)
        let client = try APNsClient(configuration: fake.configuration(timeout: .seconds(20)), tokens: fake.tokens())
        client.start()
        async let stalled = client.send(request(token("5a")))
        _ = try await fake.log(count: 1)
        let started = ContinuousClock.now
        await offThePool { client.stop(grace: .milliseconds(300)) }
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(await stalled == .uncertain("stopped"))
        #expect(await client.send(request(token("5b"))) == .notSent("stopping"))
        await fake.stop()
    }

    /// `--apns-sandbox-key-file`: the sandbox host's requests carry its key's
    /// tokens (here another key id, which the fake refuses), production's the main key's.
    @Test func eachHostCarriesItsOwnKeysTokens() async throws {
        let fake = try await FakeAPNs.start(script: #"{"tokens": {}}"#)
        let sandboxTokens = try ProviderTokens(key: ProviderKey(contentsOf: FakeAPNs.shared! + "/apns-key.p8"), teamId: FakeAPNs.teamId,
                                               keyId: "OTHERKEY12")
        let client = try APNsClient(configuration: fake.configuration(), tokens: fake.tokens(), sandboxTokens: sandboxTokens)
        client.start()
        #expect(await client.send(request(token("e5"))).status == 200)
        guard case .answered(let answer) = await client.send(request(token("e6"), host: .sandbox)) else { Issue.record("no answer"); return }
        #expect(answer.status == 403 && answer.reason == "InvalidProviderToken")
        #expect(client.tokens(for: .sandbox) === sandboxTokens && client.tokens(for: .production) !== sandboxTokens)
        await offThePool { client.stop() }
        await fake.stop()
    }

    /// `--apns-ping-interval`: a connection idle that long is replaced
    /// before the next request (libcurl counts idle time in whole seconds).
    /// Only the replacement is asserted: a sleep is a lower bound, so the
    /// idle time passed for certain, whereas "not yet idle" would depend on
    /// how soon a busy machine runs the next request (reuse within the
    /// interval is every other test's: they share one connection).
    @Test func aConnectionIdleForThePingIntervalIsReplaced() async throws {
        let fake = try await FakeAPNs.start(script: #"{"tokens": {}}"#)
        var configuration = fake.configuration()
        configuration.http.maxIdle = .seconds(1)
        let client = try APNsClient(configuration: configuration, tokens: fake.tokens())
        client.start()
        #expect(await client.send(request(token("d1"))).status == 200)
        try await Task.sleep(for: .milliseconds(2300))
        #expect(await client.send(request(token("d3"))).status == 200)
        let connections = try await fake.log(count: 2).map { $0["connection"]?.exactInt64 ?? 0 }
        #expect(connections == [1, 2])
        await offThePool { client.stop() }
        await fake.stop()
    }

    @Test func tlsIsVerifiedAgainstTheSystemRootsWithoutTheCA() async throws {
        let fake = try await FakeAPNs.start(script: #"{"tokens": {}}"#)
        var configuration = fake.configuration()
        configuration.http.caFile = nil
        let client = try APNsClient(configuration: configuration, tokens: fake.tokens())
        client.start()
        let result = await client.send(request(token("7a")))
        guard case .notSent(let why) = result else { Issue.record("\(result)"); return }
        #expect(why.contains("curl error 60"))
        await offThePool { client.stop() }
        await fake.stop()
    }
}

extension APNsResult {
    /// The HTTP status, or 0 without an answer.
    var status: Int {
        if case .answered(let answer) = self { answer.status } else { 0 }
    }
}
