import Foundation
import Postgres
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
        let separator = url!.contains("?") ? "&" : "?"
        return url! + separator + "options=-csearch_path%3D" + schema
    }

    /// A name no other test (or earlier run) uses, for tables, schemas and lock keys.
    static func uniqueName(_ prefix: String) -> String {
        prefix + "_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(12)
    }
}
