import Foundation
import Testing
import HTTPServer
import RegistrydTestSupport

extension LiveServer {
    /// Connection management: keep-alive, pipelining, HTTP/1.0, timeouts, limits.
    @Suite struct ConnectionTests {
        @Test func keepAliveServesTwoRequestsOnOneConnection() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let (first, second) = try await offThePool { [port = server.boundPort] in
                let client = try RawClient(port: port)
                try client.send("GET /one HTTP/1.1\r\nHost: t\r\n\r\n")
                let first = try client.readResponse()
                try client.send("POST /two HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc")
                return (first, try client.readResponse())
            }
            #expect(first.header("X-Path") == "/one")
            #expect(second.header("X-Path") == "/two")
            #expect(second.text == "abc")
        }

        @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let responses = try await offThePool { [port = server.boundPort] in
                let client = try RawClient(port: port)
                try client.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n"
                                + "POST /second HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi"
                                + "GET /third HTTP/1.1\r\nHost: t\r\n\r\n")
                return try (0..<3).map { _ in try client.readResponse() }
            }
            #expect(responses.map { $0.header("X-Path") } == ["/slow", "/second", "/third"])
            #expect(responses[1].text == "hi")
        }

        @Test func http10RequestIsAnsweredAndClosed() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let (response, closed) = try await offThePool { [port = server.boundPort] in
                let client = try RawClient(port: port)
                try client.send("GET /old HTTP/1.0\r\n\r\n")
                return (try client.readResponse(), client.isClosedByPeer(withinSeconds: 3))
            }
            #expect(response.status == 200)
            #expect(response.header("X-Version") == "HTTP/1.0")
            #expect(closed)
        }

        @Test func http10KeepAliveIsHonoured() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let (first, second) = try await offThePool { [port = server.boundPort] in
                let client = try RawClient(port: port)
                try client.send("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                let first = try client.readResponse()
                try client.send("GET /b HTTP/1.0\r\n\r\n")
                return (first, try client.readResponse())
            }
            #expect(first.header("X-Path") == "/a")
            #expect(second.header("X-Path") == "/b")
        }

        @Test func closeConnectionResponseClosesAfterSending() async throws {
            let server = try makeServer(ClosingApplication())
            defer { server.stop() }
            let (response, closed) = try await offThePool { [port = server.boundPort] in
                let client = try RawClient(port: port)
                try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                return (try client.readResponse(), client.isClosedByPeer(withinSeconds: 3))
            }
            #expect(response.status == 200)
            #expect(response.header("Connection")?.lowercased() == "close")
            #expect(response.header("X-Kept") == "yes")
            #expect(closed)
        }

        @Test func idleConnectionIsClosedAfterTimeout() async throws {
            let server = try makeServer { $0.idleTimeout = .seconds(1) }
            defer { server.stop() }
            let (early, late) = try await offThePool { [port = server.boundPort] in
                let client = try RawClient(port: port)
                try client.send("GET / HTTP/1.1\r\nHost: t\r\n")
                let early = client.isClosedByPeer(withinSeconds: 0.3)
                return (early, client.isClosedByPeer(withinSeconds: 3))
            }
            #expect(!early)
            #expect(late)
        }

        /// libmicrohttpd 0.9.75 stops accepting while at the limit, so an
        /// extra connection waits unserved in the kernel's backlog (the
        /// client sees no answer) and is served once a slot frees.
        @Test func connectionLimitRefusesExtraConnections() async throws {
            let server = try makeServer {
                $0.connectionLimit = 2
                $0.threads = 1
            }
            defer { server.stop() }
            let (refused, laterStatus) = try await offThePool { [port = server.boundPort] in
                var held = try (0..<2).map { _ in try RawClient(port: port) }
                for client in held {
                    try client.send("GET /held HTTP/1.1\r\nHost: t\r\n\r\n")
                    _ = try client.readResponse()
                }
                let extra = try RawClient(port: port, timeoutSeconds: 1)
                try extra.send("GET /extra HTTP/1.1\r\nHost: t\r\n\r\n")
                let refused = (try? extra.readResponse()) == nil
                held.removeFirst()
                return (refused, try? extra.readResponse().status)
            }
            #expect(refused)
            #expect(laterStatus == 200)
        }

        /// libmicrohttpd accepts a connection over the per-IP limit and closes it at once.
        @Test func perIPLimitClosesExtraConnectionFromSameAddress() async throws {
            let server = try makeServer { $0.perIPConnectionLimit = 1 }
            defer { server.stop() }
            let (firstStatus, extraClosed) = try await offThePool { [port = server.boundPort] in
                let first = try RawClient(port: port)
                try first.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                let status = try first.readResponse().status
                let extra = try RawClient(port: port)
                try? extra.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                return (status, extra.isClosedByPeer(withinSeconds: 2))
            }
            #expect(firstStatus == 200)
            #expect(extraClosed)
        }

        @Test func activeConnectionsCountsOpenConnections() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let counts = try await offThePool { [port = server.boundPort] in
                let client = try RawClient(port: port)
                try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                _ = try client.readResponse()
                return server.activeConnections
            }
            #expect(counts == 1)
        }
    }
}

/// Answers every request with a header and `closeConnection`.
private struct ClosingApplication: HTTPApplication {
    func head(_ request: HTTPRequest) -> HeadDecision {
        .readBody(maxBytes: 0, then: .suspending { _ in
            HTTPResponse(status: 200, headers: [("X-Kept", "yes")], closeConnection: true)
        })
    }
}
