import Foundation
import Testing
@testable import HTTPServer
import RegistrydTestSupport

extension LiveServer {
    /// The absolute head and body deadlines: traffic does not reset them,
    /// waiting for a handler or idling between requests is not subject to them.
    @Suite struct DeadlineTests {
        private static let headerLines = (0..<10).map { "X-Line-\($0): slowly\r\n" }

        @Test func headerLineEverySecondIsCutAtTheHeadDeadline() async throws {
            let server = try makeServer { $0.headerTimeout = .seconds(2) }
            defer { server.stop() }
            let closedAfter = try await offThePool { [port = server.boundPort] in
                let client = try RawClient(port: port)
                return client.secondsUntilClosed(sending: ["GET / HTTP/1.1\r\nHost: t\r\n"] + Self.headerLines,
                                                 every: 1)
            }
            let seconds = try #require(closedAfter)
            #expect(seconds > 1.8 && seconds < 3)
            #expect(server.connectionsCutAtDeadline == 1)
        }

        /// The request line itself counts: the clock starts at the accept.
        @Test func tricklingTheRequestLineIsCutAtTheHeadDeadline() async throws {
            let server = try makeServer { $0.headerTimeout = .seconds(1) }
            defer { server.stop() }
            let closedAfter = try await offThePool { [port = server.boundPort] in
                let client = try RawClient(port: port)
                return client.secondsUntilClosed(sending: "GET /a-very-long-path".map(String.init), every: 0.25)
            }
            let seconds = try #require(closedAfter)
            #expect(seconds > 0.8 && seconds < 2)
        }

        @Test func tricklingBodyIsCutAtTheBodyDeadline() async throws {
            let server = try makeServer { $0.bodyTimeout = .milliseconds(1500) }
            defer { server.stop() }
            let closedAfter = try await offThePool { [port = server.boundPort] in
                let client = try RawClient(port: port)
                try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 64\r\n\r\n")
                return client.secondsUntilClosed(sending: Array(repeating: "x", count: 20), every: 0.25)
            }
            let seconds = try #require(closedAfter)
            #expect(seconds > 1.3 && seconds < 2.5)
            #expect(server.connectionsCutAtDeadline == 1)
        }

        /// Between requests the idle timeout governs: a keep-alive connection
        /// silent for longer than the head deadline is still served, and is
        /// closed when the idle timeout, not the head deadline, runs out.
        @Test func idleKeepAliveFollowsTheIdleTimeout() async throws {
            let server = try makeServer {
                $0.headerTimeout = .seconds(1)
                $0.idleTimeout = .seconds(2)
            }
            defer { server.stop() }
            let (first, openAfterPause, second, openPastHeadDeadline, closedByIdle) = try await offThePool {
                [port = server.boundPort] in
                let client = try RawClient(port: port)
                try client.send("GET /one HTTP/1.1\r\nHost: t\r\n\r\n")
                let first = try client.readResponse()
                let openAfterPause = !client.isClosedByPeer(withinSeconds: 1.5)
                try client.send("GET /two HTTP/1.1\r\nHost: t\r\n\r\n")
                let second = try client.readResponse()
                let openPastHeadDeadline = !client.isClosedByPeer(withinSeconds: 1.3)
                return (first.status, openAfterPause, second.status, openPastHeadDeadline,
                        client.isClosedByPeer(withinSeconds: 2.5))
            }
            #expect(first == 200 && second == 200)
            #expect(openAfterPause && openPastHeadDeadline)
            #expect(closedByIdle)
            #expect(server.connectionsCutAtDeadline == 0)
        }

        /// Once the next request line has arrived on a keep-alive connection,
        /// the rest of its head is due within the head deadline.
        @Test func slowSecondHeadOnKeepAliveIsCut() async throws {
            let server = try makeServer { $0.headerTimeout = .seconds(1) }
            defer { server.stop() }
            let (status, closedAfter) = try await offThePool { [port = server.boundPort] in
                let client = try RawClient(port: port)
                try client.send("GET /one HTTP/1.1\r\nHost: t\r\n\r\n")
                let status = try client.readResponse().status
                return (status, client.secondsUntilClosed(sending: ["GET /two HTTP/1.1\r\n"] + Self.headerLines,
                                                          every: 0.3))
            }
            #expect(status == 200)
            let seconds = try #require(closedAfter)
            #expect(seconds > 0.8 && seconds < 2)
        }

        /// No deadline runs while the handler works: a handler slower than
        /// both deadlines still gets its answer out.
        @Test func slowHandlerIsNotCut() async throws {
            let server = try makeServer(EchoApplication(slowMilliseconds: 1500)) {
                $0.headerTimeout = .seconds(1)
                $0.bodyTimeout = .seconds(1)
            }
            defer { server.stop() }
            let response = try await offThePool { [port = server.boundPort] in
                try exchange(port, "POST /slow HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi")
            }
            #expect(response.status == 200)
            #expect(response.text == "hi")
            #expect(server.connectionsCutAtDeadline == 0)
        }

        @Test func cutConnectionsLeaveNoStateBehind() async throws {
            let server = try makeServer { $0.headerTimeout = .milliseconds(300) }
            defer { server.stop() }
            try await offThePool { [port = server.boundPort] in
                let clients = try (0..<5).map { _ in try RawClient(port: port) }
                for client in clients { try client.send("GET / HTTP/1.1\r\nHost: t\r\n") }
                for client in clients { #expect(client.isClosedByPeer(withinSeconds: 2)) }
            }
            try await Task.sleep(for: .milliseconds(200))
            #expect(server.connectionsCutAtDeadline == 5)
            #expect(server.activeConnections == 0)
            #expect(server.liveRequests == 0)
            #expect(server.trackedConnections == 0)
        }
    }
}
