import Foundation
import Glibc
import Testing
@testable import HTTPServer
import RegistrydTestSupport

extension LiveServer {
    /// Many slow or greedy clients must not lock the others out: the
    /// connection limit, the per-address cap, and the slow-loris headline.
    @Suite struct SlowClientTests {
        /// Two clients on one host: 127.0.0.2 and 127.0.0.3 (all of
        /// 127.0.0.0/8 is loopback on Linux).
        private static let greedy = "127.0.0.2"
        private static let other = "127.0.0.3"

        @Test func perAddressCapRefusesOneAddressNotAnother() async throws {
            let server = try makeServer { $0.perIPConnectionLimit = 2 }
            defer { server.stop() }
            let (heldStatuses, extraClosed, otherStatus) = try await offThePool { [port = server.boundPort] in
                let held = try (0..<2).map { _ in try RawClient(port: port, source: Self.greedy) }
                let statuses = try held.map { client in
                    try client.send("GET /held HTTP/1.1\r\nHost: t\r\n\r\n")
                    return try client.readResponse().status
                }
                let extra = try RawClient(port: port, source: Self.greedy)
                try? extra.send("GET /extra HTTP/1.1\r\nHost: t\r\n\r\n")
                let extraClosed = extra.isClosedByPeer(withinSeconds: 2)
                let other = try RawClient(port: port, source: Self.other)
                try other.send("GET /other HTTP/1.1\r\nHost: t\r\n\r\n")
                return (statuses, extraClosed, try other.readResponse().status)
            }
            #expect(heldStatuses == [200, 200])
            #expect(extraClosed)
            #expect(otherStatus == 200)
        }

        /// The default limit is in the thousands; at start the soft
        /// descriptor limit is raised toward the hard one, and the limit in
        /// force is what fits under it.
        @Test func connectionLimitFitsTheDescriptorLimit() throws {
            #expect(HTTPServerConfiguration().connectionLimit == 10_000)
            let server = try makeServer { $0.connectionLimit = 1_000_000 }
            defer { server.stop() }
            var limit = rlimit()
            getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
            if limit.rlim_cur == rlim_t.max {
                #expect(server.connectionLimit == 1_000_000)
            } else {
                #expect(limit.rlim_cur == limit.rlim_max || limit.rlim_cur >= 1_000_000)
                #expect(server.connectionLimit == Int(limit.rlim_cur) - FileDescriptorBudget.reserve)
            }
        }

        /// The measured failure on main: 1,100 connections that each send a
        /// header line every second held every slot of a 1,024 limit, and a
        /// health check from another address waited seconds. With the
        /// default limit they hold a tenth of it, and another address's
        /// requests (each on a new connection) are served promptly.
        @Test func slowLorisFromOneAddressDoesNotDelayAnother() async throws {
            let slowCount = 1_100
            try ensureFileLimit(2 * slowCount + 256)
            let server = try makeServer()
            defer { server.stop() }
            let port = server.boundPort
            let loris = try await offThePool {
                try SlowLoris(port: port, source: Self.greedy, count: slowCount, interval: 1)
            }
            loris.start()
            defer { loris.stop() }
            let (latencies, statuses, openDuring) = try await offThePool {
                var latencies: [Double] = []
                var statuses: [Int] = []
                var openDuring = Int.max
                for _ in 0..<20 {
                    Thread.sleep(forTimeInterval: 0.2)
                    let started = Date()
                    let client = try RawClient(port: port, source: Self.other, timeoutSeconds: 3)
                    try client.send("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
                    statuses.append((try? client.readResponse().status) ?? 0)
                    latencies.append(Date().timeIntervalSince(started))
                    openDuring = min(openDuring, server.activeConnections)
                }
                return (latencies, statuses, openDuring)
            }
            #expect(openDuring >= slowCount)
            #expect(loris.closedByServer == 0)
            #expect(statuses == Array(repeating: 200, count: 20))
            let worst = latencies.max() ?? .infinity
            #expect(worst < 1, "worst latency \(worst) s")
        }
    }
}

/// Raises this process's soft RLIMIT_NOFILE to at least `needed`, or fails
/// naming the hard limit that prevents it.
func ensureFileLimit(_ needed: Int) throws {
    var limit = rlimit()
    guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
    guard limit.rlim_cur != rlim_t.max, limit.rlim_cur < rlim_t(needed) else { return }
    guard limit.rlim_max == rlim_t.max || limit.rlim_max >= rlim_t(needed) else {
        throw RawClient.Failure(description: "this test needs \(needed) file descriptors; the hard limit is \(limit.rlim_max)")
    }
    limit.rlim_cur = rlim_t(needed)
    setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
}
