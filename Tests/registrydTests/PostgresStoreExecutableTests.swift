import Foundation
import RegistrydTestSupport
import Testing

/// The built `registryd` with `--store postgres`, against the test server
/// (`TestPostgres`), each test in a schema or database of its own: the API
/// end to end, several servers on one database, an outage at start and
/// while serving. Skipped when REGISTRY_TEST_POSTGRES_URL is unset. (Its
/// name does not contain "PostgresTests": tools/test's `--skip
/// PostgresTests` and `--filter PostgresTests` are patterns, meant for the
/// Postgres module's timing tests alone.)
@Suite(.serialized, .enabled(if: TestPostgres.url != nil, TestPostgres.skipReason))
struct PostgresStoreExecutableTests {
    let exe = ExecutableTests()

    static func postgres(_ url: String) -> [String] { ["--store", "postgres", "--postgres-url", url] }

    /// A device JWT signed with the secret serve generated in `directory`'s data directory.
    func jwt(_ user: String, in directory: String, _ flags: [String] = []) async throws -> String {
        let (status, minted, errors) = try await exe.run(["mint-token", "--user", user] + flags, in: directory)
        try #require(status == 0, "\(errors)")
        return minted.trimmingCharacters(in: .newlines)
    }

    func apiKey(in directory: String) throws -> String {
        try String(contentsOfFile: directory + "/registry-data/secrets/internal-api.key", encoding: .utf8)
            .trimmingCharacters(in: .newlines)
    }

    @Test func serveOnPostgresAnswersTheDeviceAndInternalAPIs() async throws {
        try await TestPostgres.withSchema { url in
            let directory = try exe.makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            // Trust authentication ignores it; it must still never be logged.
            let urlWithPassword = TestPostgres.adding("password", ExecutableTests.password, to: url)
            let server = try await ExecutableTests.Server(arguments: Self.postgres(urlWithPassword), directory: directory)
            try #require(server.port > 0, "\(server.log)")
            #expect(try await exe.request("GET", server.port, "/healthz") == (200, #"{"status":"ok"}"#))
            let alice = try await jwt("alice", in: directory), key = try apiKey(in: directory)
            let push = OperationsTests.hexToken(1), start = OperationsTests.hexToken(2), live = OperationsTests.hexToken(3)

            let register = #"{"deviceId":"D1","pushToken":"\#(push)","osVersion":"18.2","sequence":1}"#
            #expect(try await exe.request("POST", server.port, "/v1/devices", bearer: alice, body: register).0 == 201)
            #expect(try await exe.request("POST", server.port, "/v1/devices", bearer: alice, body: register).0 == 200)
            let stale = #"{"deviceId":"D1","sequence":0}"#
            #expect(try await exe.request("POST", server.port, "/v1/devices", bearer: alice, body: stale).0 == 409)
            #expect(try await exe.request("POST", server.port, "/v1/devices/push-to-start-token", bearer: alice,
                                          body: #"{"deviceId":"D1","token":"\#(start)"}"#).0 == 200)
            #expect(try await exe.request("POST", server.port, "/v1/activities/match-42/activity-token", bearer: alice,
                                          body: #"{"deviceId":"D1","token":"\#(live)"}"#).0 == 200)

            let device = try await exe.request("GET", server.port, "/v1/devices/D1", bearer: alice)
            #expect(device.0 == 200)
            for member in [#""hasPushToken":true"#, #""hasPushToStartToken":true"#, #""activityCount":1"#, #""sequence":1"#] {
                #expect(device.1.contains(member), "\(device.1)")
            }
            let sender = try await exe.request("GET", server.port, "/internal/v1/users/alice/devices", bearer: key)
            #expect(sender.0 == 200 && sender.1.contains(push) && sender.1.contains(start), "\(sender.1)")
            let lookup = try await exe.request("POST", server.port, "/internal/v1/users/lookup", bearer: key,
                                               body: #"{"userIds":["alice","nobody"]}"#)
            #expect(lookup.1.contains(push) && !lookup.1.contains("nobody"), "\(lookup.1)")
            let fanOut = try await exe.request("GET", server.port, "/internal/v1/activities/match-42/tokens", bearer: key)
            #expect(fanOut.0 == 200 && fanOut.1.contains(live) && fanOut.1.contains(#""nextCursor":null"#), "\(fanOut.1)")
            let history = try await exe.request("GET", server.port, "/internal/v1/users/alice/history", bearer: key)
            #expect(history.1.components(separatedBy: #""action":"registered""#).count == 4, "\(history.1)")

            #expect(try await exe.request("DELETE", server.port, "/v1/devices/D1?sequence=2", bearer: alice).0 == 204)
            #expect(try await exe.request("GET", server.port, "/v1/devices/D1", bearer: alice).0 == 404)
            #expect(try await exe.request("POST", server.port, "/v1/devices", bearer: alice, body: register).0 == 409,
                    "the sign-out's tombstone refuses the older register")
            #expect(server.stop() == 0)

            #expect(server.log.contains(#""event":"listening""#) && server.log.contains(#""store":"postgres""#))
            #expect(server.log.contains("password=***"), "the URL is logged redacted: \(server.log)")
            for secret in [ExecutableTests.password, key, push, start, live] {
                #expect(!server.log.contains(secret))
            }
            let (status, stats, errors) = try await exe.run(["stats", "--json"] + Self.postgres(url), in: directory)
            #expect(status == 0, "\(errors)")
            #expect(try OperationsTests.counts(stats) == ["devices": 0, "pushTokens": 0, "pushToStartTokens": 0,
                                                          "activityTokens": 0, "tombstones": 1])
        }
    }

    /// Two servers with data directories of their own on one database, given
    /// the same key files, see each other's writes at once; a server given
    /// other token keys is refused.
    @Test func twoServersOnOneDatabaseSeeEachOthersWrites() async throws {
        try await TestPostgres.withSchema { url in
            let directory = try exe.makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let first = try await ExecutableTests.Server(arguments: Self.postgres(url) + ["--data-dir", "a"], directory: directory)
            try #require(first.port > 0, "\(first.log)")

            let (refused, _, refusal) = try await exe.run(["serve", "--listen", "127.0.0.1:0", "--data-dir", "b"] + Self.postgres(url),
                                                    in: directory)
            #expect(refused == 2)
            #expect(refusal.contains("--token-key-file: the token key file does not match this registry"), "\(refusal)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/b/secrets/token-keys"), "the generated key file is removed")

            let shared = ["--token-key-file", "a/secrets/token-keys", "--internal-api-key-file", "a/secrets/internal-api.key",
                          "--jwt-hs256-secret-file", "a/secrets/jwt-hs256.secret"]
            let second = try await ExecutableTests.Server(arguments: Self.postgres(url) + ["--data-dir", "b"] + shared, directory: directory)
            try #require(second.port > 0, "\(second.log)")
            let alice = try await jwt("alice", in: directory, ["--data-dir", "a"])
            let key = try String(contentsOfFile: directory + "/a/secrets/internal-api.key", encoding: .utf8)
                .trimmingCharacters(in: .newlines)
            let push = OperationsTests.hexToken(7), live = OperationsTests.hexToken(8)

            #expect(try await exe.request("POST", first.port, "/v1/devices", bearer: alice,
                                          body: #"{"deviceId":"D1","pushToken":"\#(push)"}"#).0 == 201)
            #expect(try await exe.request("GET", second.port, "/internal/v1/users/alice/devices", bearer: key).1.contains(push))
            #expect(try await exe.request("POST", second.port, "/v1/activities/match-7/activity-token", bearer: alice,
                                          body: #"{"deviceId":"D1","token":"\#(live)"}"#).0 == 200)
            #expect(try await exe.request("GET", first.port, "/internal/v1/activities/match-7/tokens", bearer: key).1.contains(live))
            // The one-owner rule holds across servers: the token moves to D2, D1 goes.
            #expect(try await exe.request("POST", second.port, "/v1/devices", bearer: alice,
                                          body: #"{"deviceId":"D2","pushToken":"\#(push)"}"#).0 == 201)
            #expect(try await exe.request("GET", first.port, "/v1/devices/D1", bearer: alice).0 == 404)
            #expect(try await exe.request("DELETE", first.port, "/v1/devices/D2", bearer: alice).0 == 204)
            #expect(try await exe.request("GET", second.port, "/v1/devices", bearer: alice).1 == #"{"devices":[]}"#)
            #expect(first.stop() == 0)
            #expect(second.stop() == 0)
        }
    }

    /// A database lost while serving answers 503 (`/healthz` too) and the
    /// server stays up; once it is back, requests succeed again.
    @Test func aDatabaseOutageAnswers503AndServeWaitsItOut() async throws {
        try await TestPostgres.withDatabase { name, url in
            let admin = try #require(TestPostgres.url)
            let directory = try exe.makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let server = try await ExecutableTests.Server(arguments: Self.postgres(url), directory: directory)
            try #require(server.port > 0, "\(server.log)")
            let alice = try await jwt("alice", in: directory)
            #expect(try await exe.request("GET", server.port, "/healthz").0 == 200)

            try TestPostgres.psql(admin, "ALTER DATABASE \(name) ALLOW_CONNECTIONS false")
            try TestPostgres.psql(admin, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)'")
            #expect(try await exe.request("GET", server.port, "/healthz").0 == 503)
            #expect(try await exe.request("POST", server.port, "/v1/devices", bearer: alice, body: #"{"deviceId":"D1"}"#).0 == 503)
            // Prometheus still reads the process's series, and that the store's figures could not be read.
            let key = try DeliveryServing.apiKey(in: directory)
            let scrape = try await exe.request("GET", server.port, "/metrics", bearer: key)
            #expect(scrape.0 == 200)
            #expect(scrape.1.contains("registry_store_readable 0") && scrape.1.contains("registry_http_requests_total"))
            try await Task.sleep(for: .seconds(1.5))
            #expect(server.process.isRunning, "an outage of the database does not stop serve: \(server.log)")
            #expect(try await exe.request("GET", server.port, "/healthz").0 == 503)

            try TestPostgres.psql(admin, "ALTER DATABASE \(name) ALLOW_CONNECTIONS true")
            var health = 0
            for _ in 0..<50 where health != 200 {
                try await Task.sleep(for: .milliseconds(100))
                health = try await exe.request("GET", server.port, "/healthz").0
            }
            #expect(health == 200)
            #expect(try await exe.request("POST", server.port, "/v1/devices", bearer: alice, body: #"{"deviceId":"D1"}"#).0 == 201)
            #expect(try await exe.request("GET", server.port, "/metrics", bearer: key).1.contains("registry_store_readable 1"))
            #expect(server.stop() == 0)
        }
    }

    /// Started while its database refuses connections, serve retries
    /// (logging each attempt) and serves once the database is back.
    @Test func serveStartsOnceTheDatabaseComesBack() async throws {
        try await TestPostgres.withDatabase { name, url in
            let admin = try #require(TestPostgres.url)
            let directory = try exe.makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try TestPostgres.psql(admin, "ALTER DATABASE \(name) ALLOW_CONNECTIONS false")
            DispatchQueue.global().asyncAfter(deadline: .now() + 1.5) {
                try? TestPostgres.psql(admin, "ALTER DATABASE \(name) ALLOW_CONNECTIONS true")
            }
            let server = try await ExecutableTests.Server(arguments: Self.postgres(url), directory: directory)
            try #require(server.port > 0, "\(server.log)")
            #expect(server.log.contains(#""event":"store_unreachable""#), "\(server.log)")
            #expect(server.log.contains("is not currently accepting connections"), "\(server.log)")
            #expect(try await exe.request("GET", server.port, "/healthz").0 == 200)
            #expect(server.stop() == 0)
        }
    }
}
