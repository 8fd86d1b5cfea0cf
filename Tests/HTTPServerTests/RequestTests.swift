import Foundation
import Testing
import HTTPServer
import RegistrydTestSupport

/// Every test that talks to a live server; serialized so the timing-based
/// ones do not compete for the machine's two cores.
@Suite(.serialized) enum LiveServer {}

extension LiveServer {
    @Suite struct RequestTests {
        @Test func getDeliversRawPathAndQuery() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let response = try await offThePool { [port = server.boundPort] in
                try exchange(port, "GET /items/a%2Fb?x=%41&y HTTP/1.1\r\nHost: t\r\n\r\n")
            }
            #expect(response.status == 200)
            #expect(response.header("X-Method") == "GET")
            #expect(response.header("X-Path") == "/items/a%2Fb")
            #expect(response.header("X-Query") == "x=%41&y")
            #expect(response.header("Content-Length") == "0")
            #expect(response.header("X-Content-Type-Options") == nil, "only JSON answers are marked")
        }

        @Test func postDeliversBody() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let response = try await offThePool { [port = server.boundPort] in
                try exchange(port, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello world")
            }
            #expect(response.status == 200)
            #expect(response.text == "hello world")
            #expect(response.header("X-Query") == "<none>")
        }

        @Test func inlineHandlerAnswersOnTheServerThreadWithTheBody() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let responses = try await offThePool { [port = server.boundPort] in
                let client = try RawClient(port: port)
                try client.send("POST /inline HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nfirst"
                                + "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n"
                                + "GET /inline?again HTTP/1.1\r\nHost: t\r\n\r\n")
                return try (0..<3).map { _ in try client.readResponse() }
            }
            #expect(responses.map { $0.header("X-Handler") } == ["inline", "suspending", "inline"])
            #expect(responses[0].text == "first")
            #expect(responses[2].header("X-Query") == "again")
        }

        @Test func chunkedBodyIsReassembled() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let response = try await offThePool { [port = server.boundPort] in
                try exchange(port, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 + "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
            }
            #expect(response.status == 200)
            #expect(response.text == "hello world")
        }

        @Test func zeroContentLengthIsAnEmptyBody() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let response = try await offThePool { [port = server.boundPort] in
                try exchange(port, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
            }
            #expect(response.status == 200)
            #expect(response.body.isEmpty)
            #expect(response.header("X-Method") == "POST")
        }

        @Test func duplicateHeadersReachTheApplication() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let response = try await offThePool { [port = server.boundPort] in
                try exchange(port, "GET / HTTP/1.1\r\nHost: t\r\nX-Repeat: 1\r\nx-repeat: 2\r\nX-REPEAT: 3\r\n\r\n")
            }
            #expect(response.header("X-Header-Count") == "3")
        }

        @Test func headRequestGetsContentLengthButNoBody() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let (head, next) = try await offThePool { [port = server.boundPort] in
                let client = try RawClient(port: port)
                try client.send("HEAD /forbidden HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n")
                return (try client.readResponse(bodiless: true), try client.readResponse())
            }
            #expect(head.status == 403)
            #expect(Int(head.header("Content-Length") ?? "") ?? 0 > 0)
            #expect(next.status == 200)
            #expect(next.header("X-Method") == "GET")
        }

        @Test func headAnswerToBodilessRequestKeepsConnectionOpen() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let (first, second) = try await offThePool { [port = server.boundPort] in
                let client = try RawClient(port: port)
                try client.send("GET /forbidden HTTP/1.1\r\nHost: t\r\n\r\n")
                let first = try client.readResponse()
                try client.send("GET /after HTTP/1.1\r\nHost: t\r\n\r\n")
                return (first, try client.readResponse())
            }
            #expect(first.status == 403)
            #expect(first.header("Connection") == nil)
            #expect(first.text.contains("\"forbidden\""))
            #expect(second.header("X-Path") == "/after")
        }

        @Test func headAnswerToRequestWithBodyClosesConnection() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let (response, closed) = try await offThePool { [port = server.boundPort] in
                let client = try RawClient(port: port)
                try client.send("POST /forbidden HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nbody")
                return (try client.readResponse(), client.isClosedByPeer(withinSeconds: 3))
            }
            #expect(response.status == 403)
            #expect(response.header("Connection")?.lowercased() == "close")
            #expect(closed)
        }
    }
}
