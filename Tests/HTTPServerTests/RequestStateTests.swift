import Foundation
import Testing
@testable import HTTPServer
import RegistrydTestSupport

extension LiveServer {
    /// Per-request state must be released for every request, answered or
    /// not: `stop` drains by it, and a leak would also hold the memory.
    @Suite struct RequestStateTests {
        @Test func stateIsReleasedForAbortedAndRejectedRequests() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let port = server.boundPort
            try await offThePool {
                let partial = try RawClient(port: port)
                try partial.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nhal")
                let headersOnly = try RawClient(port: port)
                try headersOnly.send("GET /echo HTTP/1.1\r\nHost: t\r\nX-Unfinished: 1\r\n")
                let badChunk = try RawClient(port: port)
                try badChunk.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
                _ = badChunk.isClosedByPeer(withinSeconds: 2)
                let slow = try RawClient(port: port)
                try slow.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
                Thread.sleep(forTimeInterval: 0.1)
            }
            try await Task.sleep(for: .milliseconds(400))
            #expect(server.liveRequests == 0)
            #expect(server.activeConnections == 0)
        }

        @Test func liveRequestCountsARunningHandler() async throws {
            let server = try makeServer(EchoApplication(slowMilliseconds: 500))
            defer { server.stop() }
            let port = server.boundPort
            async let answer = offThePool { try exchange(port, "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n") }
            try await Task.sleep(for: .milliseconds(150))
            #expect(server.liveRequests == 1)
            #expect(try await answer.status == 200)
        }
    }
}
