import Foundation
import Postgres
import Synchronization
import Testing

/// The server the tests run against: `REGISTRY_TEST_POSTGRES_URL`, which
/// tools/test sets after starting a private server (tools/pg-server). When
/// it is unset the suites are skipped with that reason, not failed.
enum TestServer {
    static let url: String? = {
        let value = ProcessInfo.processInfo.environment["REGISTRY_TEST_POSTGRES_URL"] ?? ""
        return value.isEmpty ? nil : value
    }()

    static var isAvailable: Bool { url != nil }

    static let skipReason: Comment =
        "REGISTRY_TEST_POSTGRES_URL is unset: no PostgreSQL server to test against (tools/test starts one with tools/pg-server)"

    /// A fresh blocking connection (for a test's own set-up and checks).
    static func connect() throws -> PostgresConnection {
        try PostgresConnection(url!)
    }

    /// The URL with `options=-csearch_path=<schema>`, so a pool's unqualified
    /// names land in a schema of the test's own.
    static func url(searchPath schema: String) -> String {
        url(adding: "options=-csearch_path%3D" + schema)
    }

    /// The URL with one more `key=value` URI parameter (already percent-encoded).
    static func url(adding parameter: String) -> String {
        let separator = url!.contains("?") ? "&" : "?"
        return url! + separator + parameter
    }

    /// Terminates a backend from a connection of its own and waits until it
    /// has gone from pg_stat_activity and its process has exited (so its
    /// socket is closed).
    /// Throws rather than records an issue: it also runs on pool threads.
    static func terminate(_ pid: Int32) throws {
        struct NotTerminated: Error, CustomStringConvertible { let description: String }
        let killer = try connect()
        guard try killer.query("SELECT pg_terminate_backend($1::int4)", [.int64(Int64(pid))]).bool(0, 0) == true else {
            throw NotTerminated(description: "pg_terminate_backend(\(pid)) found no such backend")
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while try killer.query("SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
                               [.int64(Int64(pid))]).int64(0, 0) != 0 {
            guard ContinuousClock.now < deadline else {
                throw NotTerminated(description: "backend \(pid) still there 10 s after pg_terminate_backend")
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        // A backend leaves pg_stat_activity a moment before its process exits
        // and its socket closes; with a local server, wait for the process too
        // (at most 2 s, in case the server is not on this machine).
        let exitDeadline = ContinuousClock.now + .seconds(2)
        while kill(pid_t(pid), 0) == 0 || errno == EPERM, ContinuousClock.now < exitDeadline {
            Thread.sleep(forTimeInterval: 0.002)
        }
    }

    /// A name no other test (or earlier run) uses, for tables, schemas and lock keys.
    static func uniqueName(_ prefix: String) -> String {
        prefix + "_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(12)
    }
}

/// A value shared between a test and bodies running on connection threads.
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    var current: Value { value.withLock { $0 } }
    @discardableResult
    func update<R: Sendable>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
}

extension Shared where Value == Int {
    /// Adds one and returns the new value.
    @discardableResult
    func increment() -> Int { update { $0 += 1; return $0 } }

    /// Blocks the calling (connection) thread until the value is at least
    /// `target`, or `timeout` passed; whether it got there.
    func blockUntil(atLeast target: Int, timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while current < target {
            if Date() > deadline { return false }
            Thread.sleep(forTimeInterval: 0.002)
        }
        return true
    }

    /// The same without blocking a concurrency thread.
    func wait(atLeast target: Int, timeout: Double = 10) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while current < target {
            if Date() > deadline { return false }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return true
    }
}
