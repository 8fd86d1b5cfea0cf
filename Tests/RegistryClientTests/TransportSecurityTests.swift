import Foundation
@testable import RegistryClient
import Testing

/// What `URLSessionTransport` refuses: a redirect (it would carry the body,
/// and perhaps the credential, to wherever the answer points) and a plain
/// `http` base URL anywhere but on this machine.
@Suite struct TransportSecurityTests {
    /// A server answering 200, and one redirecting everything to it (another port, another path).
    private func makeServers() throws -> (target: TinyHTTPServer, redirector: TinyHTTPServer) {
        let target = try TinyHTTPServer { _ in "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}" }
        let redirector = try TinyHTTPServer { _ in
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:\(target.port)/elsewhere\r\n"
                + "Content-Length: 0\r\nConnection: close\r\n\r\n"
        }
        return (target, redirector)
    }

    @Test func aRedirectIsAnsweredAsItCameAndNotFollowed() async throws {
        let (target, redirector) = try makeServers()
        defer { target.stop(); redirector.stop() }
        let transport = try URLSessionTransport(baseURL: URL(string: "http://127.0.0.1:\(redirector.port)")!, timeout: 5)
        let response = try await transport.send(RegistryRequest(
            method: "POST", path: "/v1/devices", headers: ["Authorization": "Bearer secret-jwt", "Content-Type": "application/json"],
            body: Data(#"{"deviceId":"phone-1"}"#.utf8)))
        #expect(response.status == 307)
        #expect(redirector.received.count == 1)
        #expect(target.received.isEmpty, "the redirect was followed: \(target.received)")
    }

    /// A redirect's answer counts as a refusal: that payload is not sent
    /// again until the state changes, as for a 4xx (the same request would
    /// be redirected again), rather than retried with backoff for ever.
    @Test func aRedirectIsARefusalNotARetry() async throws {
        let now = Date(timeIntervalSince1970: 1_000_000)
        for status in [301, 302, 303, 307, 308] {
            #expect(Outcome(RegistryResponse(status: status), now: now) == .rejected(status: status, reason: nil))
        }
        let (target, redirector) = try makeServers()
        defer { target.stop(); redirector.stop() }
        let clock = ManualClock()
        var configuration = RegistryClient.Configuration()
        configuration.jitter = { 1 }
        let client = RegistryClient(
            deviceId: "phone-1", transport: try URLSessionTransport(baseURL: URL(string: "http://127.0.0.1:\(redirector.port)")!, timeout: 5),
            sequenceStore: InMemorySequenceStore(), signOutStore: InMemorySignOutStore(), clock: clock, configuration: configuration)
        client.signedIn(userId: "alice", credentials: credentials("alice"))
        client.pushTokenReceived(PushToken(value: tokenA))
        await client.flush()
        #expect(redirector.received.count == 1)
        clock.advance(by: .seconds(3600))
        client.enteredForeground()
        await client.flush()
        #expect(redirector.received.count == 1, "the redirected state was sent again")
        #expect(target.received.isEmpty)
        await client.close()
    }

    @Test(arguments: ["https://registry.example.com", "https://registry.example.com:8443/registry/",
                      "http://localhost:8080", "http://LOCALHOST", "http://127.0.0.1:8080", "http://127.45.6.7",
                      "http://[::1]:8080/registry"])
    func httpsOrALoopbackHostIsAccepted(_ url: String) throws {
        _ = try URLSessionTransport(baseURL: URL(string: url)!)
    }

    @Test(arguments: ["http://registry.example.com", "http://10.0.0.7:8080", "http://localhost.example.com",
                      "http://127.0.0.1.example.com", "http://0127.0.0.1", "http://128.0.0.1", "http://[::2]",
                      "ftp://registry.example.com", "registry.example.com", "http:///v1"])
    func plainHTTPElsewhereIsRefused(_ url: String) throws {
        let error = #expect(throws: URLSessionTransport.InsecureBaseURL.self) { try URLSessionTransport(baseURL: URL(string: url)!) }
        #expect(error?.description.contains("must be https (plain http only to localhost, 127.0.0.0/8 or ::1)") == true)
    }
}
