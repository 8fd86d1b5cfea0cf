import Foundation
@testable import RegistryClient
import Synchronization
import Testing

/// Transient failures back off (honouring `Retry-After`), permanent ones
/// stop until the state changes, conflicts resolve or stop.
@Suite struct RetryTests {
    /// Answers `response` to the next `count` requests, then lets the model answer.
    private func fail(_ server: FakeRegistry, _ count: Int, with response: RegistryResponse) {
        let remaining = Mutex(count)
        server.script { _ in
            remaining.withLock { remaining in
                guard remaining > 0 else { return nil }
                remaining -= 1
                return response
            }
        }
    }

    @Test func backsOffExponentiallyOn503() async {
        let harness = Harness.signedIn()
        fail(harness.server, 2, with: RegistryResponse(status: 503))
        await harness.client.flush()
        #expect(harness.server.seen.count == 1)

        await harness.advance(seconds: 0.9)
        #expect(harness.server.seen.count == 1, "the first pause is 1 s")
        await harness.advance(seconds: 0.2)
        #expect(harness.server.seen.count == 2)

        await harness.advance(seconds: 1.8)
        #expect(harness.server.seen.count == 2, "the second pause is 2 s")
        await harness.advance(seconds: 0.3)
        #expect(harness.server.seen.count == 3)
        #expect(harness.server.device("alice")?.pushToken == tokenA)
    }

    @Test func honoursRetryAfterOn429() async {
        let harness = Harness.signedIn()
        fail(harness.server, 1, with: RegistryResponse(status: 429, headers: ["Retry-After": "30"]))
        await harness.client.flush()
        await harness.advance(seconds: 29)
        harness.client.pushTokenReceived(PushToken(value: tokenB))
        await harness.client.flush()
        #expect(harness.server.seen.count == 1, "neither time nor a new state overrides Retry-After")
        await harness.advance(seconds: 2)
        #expect(harness.server.seen.count == 2)
        #expect(harness.server.device("alice")?.pushToken == tokenB)
    }

    @Test func networkErrorsAndMissingCredentialsAreRetried() async {
        let harness = Harness()
        let attempts = Mutex(0)
        harness.client.signedIn(userId: "alice") {
            let attempt = attempts.withLock { attempts in
                attempts += 1
                return attempts
            }
            if attempt == 1 { throw URLError(.notConnectedToInternet) }
            return "token-alice"
        }
        await harness.client.flush()
        #expect(harness.server.seen.isEmpty)
        await harness.advance(seconds: 1.1)
        #expect(harness.server.device("alice") != nil)
    }

    @Test func permanent400StopsRetryingUntilTheStateChanges() async {
        let harness = Harness.signedIn()
        harness.server.script { request in
            String(decoding: request.body ?? Data(), as: UTF8.self).contains(tokenA)
                ? RegistryResponse(status: 400, body: Data(#"{"error":{"code":"invalid_field"}}"#.utf8)) : nil
        }
        await harness.client.flush()
        await harness.advance(seconds: 3600)
        harness.client.enteredForeground()
        await harness.client.flush()
        #expect(harness.server.seen.count == 1, "the same state is not sent again")

        harness.client.pushTokenReceived(PushToken(value: tokenB))
        await harness.client.flush()
        #expect(harness.server.seen.count == 2)
        #expect(harness.server.device("alice")?.pushToken == tokenB)

        harness.client.pushTokenReceived(PushToken(value: tokenA))
        await harness.client.flush()
        #expect(harness.server.seen.count == 2, "the refused state is still refused")

        harness.client.signedOut()
        harness.client.signedIn(userId: "alice", credentials: credentials("alice"))
        await harness.client.flush()
        #expect(harness.server.seen.map(\.method).suffix(2) == ["DELETE", "POST"], "a new session tries again")
    }

    @Test func stormOf429IsAbsorbedByBackoff() async {
        let harness = Harness(jitter: { Double.random(in: 0...1) })
        harness.client.signedIn(userId: "alice", credentials: credentials("alice"))
        harness.client.pushTokenReceived(PushToken(value: tokenA))
        harness.server.script { _ in RegistryResponse(status: 429, headers: ["Retry-After": "1"]) }
        await harness.client.flush()
        for _ in 0..<600 {
            if Bool.random() { harness.client.enteredForeground() }
            await harness.advance(seconds: 1)
        }
        // Shortest pauses (half of each step): 0.5+1+2+…+128 = 255.5 s for the
        // first ten requests, then 150 s each: at most 13 in ten minutes.
        let count = harness.server.seen.count
        #expect(count >= 8 && count <= 13, "\(count) requests")

        harness.server.script(nil)
        await harness.advance(seconds: 300)
        #expect(harness.server.device("alice")?.pushToken == tokenA, "it recovers when the storm ends")
    }

    @Test func repeatedConflictStopsUntilTheStateChanges() async {
        let harness = Harness.signedIn()
        harness.server.script { $0.method == "POST" ? RegistryResponse(status: 409) : nil }
        await harness.client.flush()
        await harness.advance(seconds: 3600)
        #expect(harness.server.seen.map(\.method) == ["POST", "GET", "POST", "GET"],
                "one retry after reading the stored sequence, then it stops")
        harness.server.script(nil)
        harness.client.pushTokenReceived(PushToken(value: tokenB))
        await harness.client.flush()
        #expect(harness.server.device("alice")?.pushToken == tokenB)
    }

    @Test func conflictFromAnOlderWriterIsResolvedByAFreshSequence() async {
        let server = FakeRegistry()
        let clockMilliseconds = UInt64(ManualClock().date.timeIntervalSince1970 * 1000)
        server.storeSequence(clockMilliseconds, user: "alice")
        let store = InMemorySequenceStore(clockMilliseconds - 10)
        let fresh = Harness(server: server, store: store, clock: ManualClock(date: Date(timeIntervalSince1970: 0)))
        fresh.client.signedIn(userId: "alice", credentials: credentials("alice"))
        fresh.client.pushTokenReceived(PushToken(value: tokenB))
        await fresh.client.flush()
        #expect(fresh.server.seen.map(\.status) == [409, 200, 200], "POST refused, GET, POST above the stored sequence")
        #expect((fresh.server.seen.last?.sequence ?? 0) > clockMilliseconds)
        #expect(fresh.server.device("alice")?.pushToken == tokenB)
    }
}
