import Foundation
import Glibc
import Testing
import HTTPServer
import RegistrydTestSupport
import Synchronization

extension LiveServer {
    /// Starting, stopping, and handlers that take their time.
    @Suite struct LifecycleTests {
        /// Sixteen 300 ms handlers on two server threads: more than two run
        /// at once, since a suspended handler holds no server thread (a
        /// blocking design would cap them at two, and need 16 × 300 ms / 2).
        /// Counted, not timed, so a loaded or sanitized run tells the same.
        @Test func slowHandlersDoNotBlockServerThreads() async throws {
            let probe = ConcurrencyProbe(sleep: .milliseconds(300))
            let server = try makeServer(probe)
            defer { server.stop() }
            let port = server.boundPort
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<16 {
                    group.addTask { try await offThePool { try exchange(port, "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n").status } }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 16))
            #expect(probe.peak > 2, "at most \(probe.peak) handlers ran at once on 2 server threads")
        }

        @Test func stopFinishesInFlightRequestThenRefusesNewOnes() async throws {
            let server = try makeServer(EchoApplication(slowMilliseconds: 400))
            let port = server.boundPort
            async let inFlight = offThePool { try exchange(port, "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n") }
            try await Task.sleep(for: .milliseconds(100))
            try await offThePool { server.stop() }
            let response = try await inFlight
            #expect(response.status == 200)
            #expect(response.header("X-Path") == "/slow")
            let refused = try await offThePool { (try? RawClient(port: port)) == nil }
            #expect(refused)
        }

        @Test func requestArrivingWhileStoppingIs503WithRetryAfter() async throws {
            let server = try makeServer(EchoApplication(slowMilliseconds: 600))
            let port = server.boundPort
            let idle = try await offThePool {
                let client = try RawClient(port: port)
                try client.send("GET /first HTTP/1.1\r\nHost: t\r\n\r\n")
                _ = try client.readResponse()
                return SendableBox(client)
            }
            async let inFlight = offThePool { try exchange(port, "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n") }
            try await Task.sleep(for: .milliseconds(100))
            async let stopped: Void = offThePool { server.stop() }
            try await Task.sleep(for: .milliseconds(150))
            let (late, closed) = try await offThePool {
                try idle.value.send("GET /late HTTP/1.1\r\nHost: t\r\n\r\n")
                return (try idle.value.readResponse(), idle.value.isClosedByPeer(withinSeconds: 3))
            }
            #expect(late.status == 503)
            #expect(late.header("Retry-After") == HTTPResponse.retryAfterSeconds)
            #expect(late.text.contains("\"unavailable\""))
            #expect(closed)
            #expect(try await inFlight.status == 200)
            try await stopped
        }

        @Test func stopClosesIdleKeepAliveConnections() async throws {
            let server = try makeServer()
            let port = server.boundPort
            let idle = try await offThePool {
                let client = try RawClient(port: port)
                try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                _ = try client.readResponse()
                return SendableBox(client)
            }
            let started = ContinuousClock.now
            try await offThePool { server.stop() }
            #expect(ContinuousClock.now - started < .seconds(1))
            let closed = try await offThePool { idle.value.isClosedByPeer(withinSeconds: 2) }
            #expect(closed)
        }

        /// A handler still running at the drain deadline is answered 503 by
        /// `stop`, which then returns instead of waiting for it.
        @Test func stopAnswersHandlersStillRunningAtDeadline() async throws {
            let handling = DispatchSemaphore(value: 0)
            let server = try makeServer(EchoApplication(slowMilliseconds: 5_000, slowStarted: { handling.signal() })) {
                $0.drainTimeout = .milliseconds(300)
            }
            let port = server.boundPort
            async let inFlight = offThePool { try exchange(port, "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n") }
            // The handler runs before the stop begins (a fixed pause lost that race under AddressSanitizer).
            await offThePool { handling.wait() }
            let started = ContinuousClock.now
            try await offThePool { server.stop() }
            #expect(ContinuousClock.now - started < .seconds(2))
            let response = try await inFlight
            #expect(response.status == 503)
            #expect(response.header("Retry-After") == HTTPResponse.retryAfterSeconds)
        }

        @Test func handlerFinishingAfterClientLeftIsHarmless() async throws {
            let server = try makeServer(EchoApplication(slowMilliseconds: 150))
            defer { server.stop() }
            let port = server.boundPort
            try await offThePool {
                let client = try RawClient(port: port)
                try client.send("POST /slow HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi")
            }
            try await Task.sleep(for: .milliseconds(400))
            let response = try await offThePool { try exchange(port, "GET /after HTTP/1.1\r\nHost: t\r\n\r\n") }
            #expect(response.status == 200)
            try await Task.sleep(for: .milliseconds(100))
            #expect(server.activeConnections == 0)
        }

        @Test func stopIsIdempotentAndSafeBeforeStart() throws {
            let unstarted = HTTPServer(configuration: HTTPServerConfiguration(), application: EchoApplication())
            unstarted.stop()
            #expect(throws: HTTPServerError.alreadyStarted) { try unstarted.start() }
            let server = try makeServer()
            server.stop()
            server.stop()
            #expect(server.activeConnections == 0)
        }

        @Test func startOnBusyPortThrowsNamingTheAddress() throws {
            let first = try makeServer()
            defer { first.stop() }
            let port = first.boundPort
            #expect(port != 0)
            do {
                let second = try makeServer { $0.port = port }
                second.stop()
                Issue.record("a second server bound the same port")
            } catch let error as HTTPServerError {
                guard case .cannotListen(let address, _) = error else {
                    Issue.record("unexpected error \(error)")
                    return
                }
                #expect(address == "127.0.0.1:\(port)")
                #expect(String(describing: error).contains("127.0.0.1:\(port)"))
            }
        }

        @Test func hostNameIsRefusedAsNotALiteral() {
            #expect(throws: HTTPServerError.invalidHost("localhost")) {
                try makeServer { $0.host = "localhost" }
            }
        }

        @Test func ipv6LoopbackIsServed() async throws {
            let server = try makeServer { $0.host = "::1" }
            defer { server.stop() }
            let response = try await offThePool { [port = server.boundPort] in
                let client = try RawClient(port: port, host: "::1")
                try client.send("GET /six HTTP/1.1\r\nHost: t\r\n\r\n")
                return try client.readResponse()
            }
            #expect(response.header("X-Path") == "/six")
        }
    }
}

/// Carries a non-Sendable test client between the blocking threads of one
/// test, which use it strictly one after another.
struct SendableBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// An application whose handlers sleep and count how many ran at once.
private final class ConcurrencyProbe: HTTPApplication {
    private let sleep: Duration
    private let counts = Mutex<(running: Int, peak: Int)>((0, 0))

    init(sleep: Duration) { self.sleep = sleep }

    var peak: Int { counts.withLock { $0.peak } }

    func head(_ request: HTTPRequest) -> HeadDecision {
        .readBody(maxBytes: 0, then: .suspending { [self] request in
            counts.withLock { $0.running += 1; $0.peak = max($0.peak, $0.running) }
            try? await Task.sleep(for: sleep)
            counts.withLock { $0.running -= 1 }
            return HTTPResponse(status: 200, headers: [], body: [])
        })
    }
}
