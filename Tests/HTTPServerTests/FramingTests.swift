import Foundation
import Testing
import HTTPServer
import RegistrydTestSupport

extension LiveServer {
    /// Framing errors: the server's own answers (JSON, connection closed)
    /// and what libmicrohttpd 0.9.75 does by itself with malformed chunks.
    @Suite struct FramingTests {
        /// Sends `request` on a fresh connection; returns the answer and whether the server then closed.
        private func answerAndClose(_ port: UInt16, _ request: String) async throws -> (RawClient.Response, Bool) {
            try await offThePool {
                let client = try RawClient(port: port)
                try client.send(request)
                return (try client.readResponse(), client.isClosedByPeer(withinSeconds: 3))
            }
        }

        @Test func headersOver16KiBAnswer431JSON() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let filler = String(repeating: "a", count: 8 * 1024)
            let (response, closed) = try await answerAndClose(
                server.boundPort, "GET / HTTP/1.1\r\nHost: t\r\nX-One: \(filler)\r\nX-Two: \(filler)\r\n\r\n")
            #expect(response.status == 431)
            #expect(response.header("Content-Type") == "application/json")
            #expect(response.header("X-Content-Type-Options") == "nosniff", "every JSON answer, the server's own too")
            #expect(response.text.contains("\"headers_too_large\""))
            #expect(closed)
        }

        /// Past the connection memory pool (32 KiB here) libmicrohttpd refuses
        /// by itself; the answer is an error status, not the application's.
        @Test func headersBeyondTheMemoryPoolAreRefusedByLibmicrohttpd() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let filler = String(repeating: "a", count: 8 * 1024)
            let lines = (0..<12).map { "X-\($0): \(filler)\r\n" }.joined()
            let (response, closed) = try await answerAndClose(server.boundPort, "GET / HTTP/1.1\r\nHost: t\r\n\(lines)\r\n")
            #expect(response.status == 431)
            #expect(response.header("X-Method") == nil)
            #expect(closed)
        }

        @Test func headersJustUnderTheLimitAreServed() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let filler = String(repeating: "a", count: 15 * 1024)
            let response = try await offThePool { [port = server.boundPort] in
                try exchange(port, "GET / HTTP/1.1\r\nHost: t\r\nX-One: \(filler)\r\n\r\n")
            }
            #expect(response.status == 200)
        }

        @Test func contentLengthWithTransferEncodingIs400AndCloses() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let (response, closed) = try await answerAndClose(
                server.boundPort, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n"
                    + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
            #expect(response.status == 400)
            #expect(response.text.contains("\"bad_request\""))
            #expect(closed)
        }

        @Test func conflictingContentLengthsAre400AndClose() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let (response, closed) = try await answerAndClose(
                server.boundPort, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!")
            #expect(response.status == 400)
            #expect(response.text.contains("\"bad_request\""))
            #expect(closed)
        }

        @Test func unsupportedTransferEncodingIs400() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let (response, closed) = try await answerAndClose(
                server.boundPort, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\nxx")
            #expect(response.status == 400)
            #expect(closed)
        }

        /// libmicrohttpd rejects a chunk size that is not hex by itself
        /// (400 with its own HTML body) and closes; the handler never runs.
        @Test func badChunkSizeIsRejectedAndClosed() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let (response, closed) = try await answerAndClose(
                server.boundPort, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n")
            #expect((400..<500).contains(response.status))
            #expect(response.header("X-Method") == nil)
            #expect(closed)
        }

        /// libmicrohttpd answers a non-numeric Content-Length itself (400, HTML) and closes.
        @Test func nonNumericContentLengthIsRejectedAndClosed() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let (response, closed) = try await answerAndClose(
                server.boundPort, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: five\r\n\r\nhello")
            #expect(response.status == 400)
            #expect(response.header("X-Method") == nil)
            #expect(closed)
        }

        @Test func declaredBodyOverLimitIs413AndCloses() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let (response, closed) = try await answerAndClose(
                server.boundPort, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n"
                    + String(repeating: "b", count: 100))
            #expect(response.status == 413)
            #expect(response.text.contains("\"payload_too_large\""))
            #expect(closed)
        }

        @Test func chunkedBodyOverLimitIs413AndCloses() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let chunk = String(repeating: "c", count: 600)
            let (response, closed) = try await answerAndClose(
                server.boundPort, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "258\r\n\(chunk)\r\n258\r\n\(chunk)\r\n0\r\n\r\n")
            #expect(response.status == 413)
            #expect(response.text.contains("\"payload_too_large\""))
            #expect(response.header("Connection")?.lowercased() == "close")
            #expect(closed)
        }

        /// The server itself refuses a declared length over `readBody`'s limit,
        /// even when the application's `head` did not check it.
        @Test func declaredLengthOverReadBodyLimitIs413EvenWithoutApplicationCheck() async throws {
            let server = try makeServer(TrustingApplication())
            defer { server.stop() }
            let (response, closed) = try await answerAndClose(
                server.boundPort, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello world")
            #expect(response.status == 413)
            #expect(closed)
        }

        /// A chunked body that keeps going far past its limit is cut off:
        /// libmicrohttpd cannot answer mid-body, so the server drops at most
        /// 64 KiB more and then closes without answering.
        @Test func endlessChunkedBodyIsCutOff() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let closed = try await offThePool { [port = server.boundPort] in
                let client = try RawClient(port: port)
                try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
                let chunk = "4000\r\n" + String(repeating: "e", count: 0x4000) + "\r\n"
                for _ in 0..<8 { try? client.send(chunk) }
                return client.isClosedByPeer(withinSeconds: 3)
            }
            #expect(closed)
        }

        @Test func bodyExactlyAtLimitIsDelivered() async throws {
            let server = try makeServer()
            defer { server.stop() }
            let body = String(repeating: "d", count: 1024)
            let response = try await offThePool { [port = server.boundPort] in
                try exchange(port, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1024\r\n\r\n\(body)")
            }
            #expect(response.status == 200)
            #expect(response.body.count == 1024)
        }
    }
}

/// Reads every body up to 10 bytes without looking at the declared length.
private struct TrustingApplication: HTTPApplication {
    func head(_ request: HTTPRequest) -> HeadDecision {
        .readBody(maxBytes: 10, then: .inline { HTTPResponse(status: 200, body: $0.body) })
    }
}
