import Foundation
import RegistrydTestSupport
import Testing

/// The PostgreSQL server the `--store postgres` tests run against:
/// `REGISTRY_TEST_POSTGRES_URL` (tools/test starts one with tools/pg-server;
/// by hand: `tools/pg-server start /tmp/pg` prints the URL). Unset, those
/// tests are skipped. Each test gets a schema (or a database) of its own,
/// dropped afterwards, so tests never see each other's registries.
enum TestPostgres {
    static let url = ProcessInfo.processInfo.environment["REGISTRY_TEST_POSTGRES_URL"]
    static let skipReason: Comment = "REGISTRY_TEST_POSTGRES_URL is not set (tools/pg-server start DIR prints one)"

    /// Runs `body` with the URL of a registry of its own: a new schema, made
    /// the connections' search path (the store migrates into it).
    static func withSchema(_ body: (String) async throws -> Void) async throws {
        let admin = try #require(url)
        let schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try psql(admin, "CREATE SCHEMA \(schema)")
        defer { try? psql(admin, "DROP SCHEMA \(schema) CASCADE") }
        try await body(adding("options", "-csearch_path%3D\(schema)", to: admin))
    }

    /// Runs `body` with the name and URL of a new database of its own (for
    /// tests that refuse connections to it: `ALTER DATABASE … ALLOW_CONNECTIONS`).
    static func withDatabase(_ body: (_ name: String, _ url: String) async throws -> Void) async throws {
        let admin = try #require(url)
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try psql(admin, "CREATE DATABASE \(name)")
        defer { try? psql(admin, "DROP DATABASE \(name) WITH (FORCE)") }
        try await body(name, adding("dbname", name, to: admin))
    }

    /// `url` with one more connection parameter (a URI's query parameter, or a `key=value` pair).
    static func adding(_ key: String, _ value: String, to url: String) -> String {
        guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else { return url + " \(key)=\(value)" }
        return url + (url.contains("?") ? "&" : "?") + "\(key)=\(value)"
    }

    /// Runs SQL on the test server as its administrator; throws when psql fails.
    static func psql(_ url: String, _ sql: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: psqlPath)
        process.arguments = ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql]
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failure(description: "psql \(sql): \(message)") }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private static let psqlPath = ["/usr/bin/psql", "/usr/lib/postgresql/15/bin/psql"]
        .first { FileManager.default.isExecutableFile(atPath: $0) } ?? "psql"
}
