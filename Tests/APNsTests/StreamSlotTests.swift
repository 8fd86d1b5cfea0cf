import APNs
import APNsTestSupport
import RegistrydTestSupport
import Synchronization
import Testing

/// Requests beyond the streams a server allows wait for a slot, and the
/// request timeout counts only from when a request's stream is sent.
@Suite(.enabled(if: FakeAPNs.available, "needs /usr/bin/python3 with h2 and cryptography (tools/install-deps --test)"))
struct StreamSlotTests {
    /// 12 requests to a host that takes 4 streams at a time and answers
    /// each after 1.8 s of a 3 s timeout: three waves, 5.4 s in all, and
    /// none may time out (libcurl's own timeout counted the wait for a
    /// slot). One request first, so the client knows the server's limit
    /// (before its SETTINGS arrive libcurl assumes 100 streams).
    @Test func aFanOutLargerThanTheServersStreamsNeverTimesOutEarly() async throws {
        let tokens = (0..<12).map { token(String(0x100 + $0, radix: 16)) }
        let fake = try await FakeAPNs.start(script: Self.script(tokens.map { ($0, 1800) }), options: ["--max-streams", "4"])
        try await stopping(fake) { fake in
            let client = try await Self.client(fake, timeout: .seconds(3))
            let results = await withTaskGroup(of: APNsResult.self) { group in
                for token in tokens { group.addTask { await Self.send(token, client) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            await offThePool { client.stop() }
            Self.expectAnswered(results)
        }
    }

    /// A handle is reused for the next request as soon as its answer
    /// comes, and that request may wait for a stream for longer than the
    /// timeout has left: its clock starts when it is sent, not when the
    /// handle's previous request was. A slow request ahead of them keeps
    /// the older deadlines queued: 2 streams at the host, a 4 s timeout;
    /// the slow one answers after 3.2 s, the six others after 1.2 s, and
    /// the sixth is loaded into the first fast one's handle at 1.2 s but
    /// sent only at about 4.4 s.
    @Test func aReusedHandleStartsItsRequestsClockAfresh() async throws {
        let slow = token("1ff")
        let fast = (0..<6).map { token(String(0x200 + $0, radix: 16)) }
        let fake = try await FakeAPNs.start(script: Self.script([(slow, 3200)] + fast.map { ($0, 1200) }),
                                            options: ["--max-streams", "2"])
        try await stopping(fake) { fake in
            let client = try await Self.client(fake, timeout: .seconds(4))
            let results = await withTaskGroup(of: APNsResult.self) { group in
                group.addTask { await Self.send(slow, client) }
                try? await Task.sleep(for: .milliseconds(50))
                for token in fast { group.addTask { await Self.send(token, client) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            await offThePool { client.stop() }
            Self.expectAnswered(results)
        }
    }

    /// Requests reach the host in the order they were sent, however many
    /// wait for a stream: libcurl's own queue is not first come, first
    /// served, and one request of a fan-out waited out the whole fan-out
    /// there (long enough for its claim to be abandoned). 400 requests, 40
    /// at a time as the sender keeps them, to a host that takes 4 streams:
    /// none may reach it more than 20 places after its turn.
    @Test func requestsWaitingForAStreamAreSentInTheOrderTheyCame() async throws {
        let total = 400, window = 40
        let tokens = (0..<total).map { token(String(0x10000 + $0, radix: 16)) }
        let fake = try await FakeAPNs.start(script: Self.script(tokens.map { ($0, 50) }), options: ["--max-streams", "4"])
        try await stopping(fake) { fake in
            let client = try await Self.client(fake, timeout: .seconds(30))
            // A request's turn is when it is handed to the client: on a busy
            // machine the tasks that send may start in another order.
            let handedOver = HandOverOrder()
            await withTaskGroup(of: Void.self) { group in
                var next = 0
                func sendNext() {
                    let token = tokens[next]
                    next += 1
                    group.addTask {
                        handedOver.record(token)
                        _ = await Self.send(token, client)
                    }
                }
                for _ in 0..<window { sendNext() }
                while await group.next() != nil {
                    if next < total { sendNext() }
                }
            }
            await offThePool { client.stop() }
            let turns = Dictionary(uniqueKeysWithValues: handedOver.tokens.enumerated().map { ($1, $0) })
            let arrivals = try await fake.log(count: total + 1).compactMap { record -> Int? in
                guard case .string(let token)? = record["token"] else { return nil }
                return turns[token]
            }
            #expect(arrivals.count == total)
            let late = arrivals.enumerated().map { place, turn in (turn: turn, by: place - turn) }.max { $0.by < $1.by }
            #expect((late?.by ?? 0) <= 20, "request \(late?.turn ?? 0) reached the host \(late?.by ?? 0) places after its turn")
        }
    }

    /// The fake's script: each token answered 200 after its delay (ms).
    static func script(_ answers: [(token: String, delayMs: Int)]) -> String {
        #"{"tokens": {"# + answers.map { #""\#($0.token)": [{"status": 200, "delayMs": \#($0.delayMs)}]"# }
            .joined(separator: ", ") + "}}"
    }

    /// A started client that has learnt the host's stream limit from one
    /// request (before its SETTINGS arrive libcurl assumes 100 streams).
    static func client(_ fake: FakeAPNs, timeout: Duration) async throws -> APNsClient {
        let client = try APNsClient(configuration: fake.configuration(timeout: timeout), tokens: fake.tokens())
        client.start()
        #expect(await client.send(request(token("ff"))).status == 200)
        return client
    }

    /// One request, sent again when its stream was refused, as the provider does.
    static func send(_ token: String, _ client: APNsClient) async -> APNsResult {
        var result = await client.send(request(token))
        for _ in 0..<3 { if case .refused = result { result = await client.send(request(token)) } }
        return result
    }

    static func expectAnswered(_ results: [APNsResult], sourceLocation: SourceLocation = #_sourceLocation) {
        let failures = results.filter { $0.status != 200 }
        #expect(failures.isEmpty, "\(failures.count) of \(results.count) not answered: \(failures.first.map { "\($0)" } ?? "")",
                sourceLocation: sourceLocation)
    }
}

/// The tokens in the order their requests were handed to the client.
private final class HandOverOrder: Sendable {
    private let state = Mutex<[String]>([])

    func record(_ token: String) { state.withLock { $0.append(token) } }

    var tokens: [String] { state.withLock { $0 } }
}
