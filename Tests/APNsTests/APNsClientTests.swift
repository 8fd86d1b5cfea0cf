import APNs
import APNsTestSupport
import Foundation
import Glibc
import RegistrydTestSupport
import Testing

/// The client without an APNs to talk to: its configuration checks, and
/// the failures that must be `notSent` (nothing was written).
@Suite struct APNsClientTests {
    private func tokens() async throws -> ProviderTokens {
        let keys = await offThePool { TestKeys.shared }
        return try ProviderTokens(key: ProviderKey(contentsOf: keys.p256), teamId: "TEAM", keyId: "KID")
    }

    private func client(_ url: String, timeout: Duration = .seconds(5)) async throws -> APNsClient {
        try APNsClient(configuration: APNsClientConfiguration(productionURL: url, sandboxURL: url, requestTimeout: timeout),
                       tokens: await tokens())
    }

    @Test func refusesPlainHTTPAndPaths() async throws {
        let tokens = try await tokens()
        for url in ["http://127.0.0.1:8080", "https://", "https://host/path", "ftp://host"] {
            let error = #expect(throws: APNsClientError.self) {
                try APNsClient(configuration: APNsClientConfiguration(sandboxURL: url), tokens: tokens)
            }
            #expect(error?.message.contains(url) == true)
        }
        #expect(throws: APNsClientError.self) {
            try APNsClient(configuration: APNsClientConfiguration(caFile: "/nonexistent/ca.pem"), tokens: tokens)
        }
        _ = try APNsClient(configuration: APNsClientConfiguration(productionURL: "https://127.0.0.1:1/"), tokens: tokens)
    }

    @Test func closedPortIsNotSent() async throws {
        let port = try closedPort()
        let client = try await client("https://127.0.0.1:\(port)")
        client.start()
        let result = await client.send(request(token("01")))
        guard case .notSent(let why) = result else { Issue.record("\(result)"); return }
        #expect(why.contains("curl error 7"))
        await offThePool { client.stop() }
    }

    /// A listener that never accepts: TCP connects (the kernel's backlog)
    /// but the TLS handshake never completes, so nothing was written.
    @Test func silentServerTimesOutAsNotSent() async throws {
        let listener = try SilentListener()
        defer { listener.close() }
        let client = try await client("https://127.0.0.1:\(listener.port)", timeout: .seconds(1))
        client.start()
        let started = ContinuousClock.now
        let result = await client.send(request(token("02")))
        // libcurl's connect timeout (the request timeout, 1 s) ended it. The
        // wall clock only guards against a hang: on two busy cores the
        // thread that notices the timer may run seconds late.
        #expect(ContinuousClock.now - started < .seconds(20))
        guard case .notSent(let why) = result else { Issue.record("\(result)"); return }
        #expect(why.contains("curl error 28") && why.lowercased().contains("timeout"), "\(why)")
        await offThePool { client.stop() }
    }

    @Test func refusesBeforeStartAfterStopAndInvalidRequests() async throws {
        let client = try await client("https://127.0.0.1:1")
        #expect(await client.send(request(token("03"))) == .notSent("not started"))
        client.start()
        var invalid = request(token("04"))
        invalid.deviceToken = "not hex/../"
        guard case .notSent(let why) = await client.send(invalid) else { Issue.record("sent"); return }
        #expect(why.contains("device token"))
        invalid = request(token("05"))
        invalid.topic = "com.example\r\nx-injected: 1"
        guard case .notSent = await client.send(invalid) else { Issue.record("sent"); return }
        await offThePool { client.stop(grace: .seconds(1)) }
        #expect(await client.send(request(token("06"))) == .notSent("stopping"))
    }

    /// A port nothing listens on: bound, then closed.
    private func closedPort() throws -> Int {
        let listener = try SilentListener()
        listener.close()
        return listener.port
    }
}

/// A TCP socket on 127.0.0.1 that listens and never accepts.
final class SilentListener: @unchecked Sendable {
    let port: Int
    private let descriptor: Int32

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && listen(descriptor, 16) == 0
                    && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(descriptor)
            throw TestFailure("cannot listen on 127.0.0.1")
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() {
        Glibc.close(descriptor)
    }
}
