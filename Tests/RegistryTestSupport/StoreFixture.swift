import Foundation
import TokenSealing
import LMDB
import Postgres
import Testing
@testable import RegistryCore
@testable import RegistryLMDB
@testable import RegistryPostgres
import Synchronization

/// The token keys every in-process test store uses (one ring per test
/// process, so a store reopened in the same process opens its tokens).
package enum TestKeys {
    package static let ring = try! TokenKeyRing.generate()
}

/// The apps every test store declares (`--apps`): the ones the behaviour
/// tests name. Any other app id is undeclared.
package enum TestApps {
    package static let ids = ["com.acme.one", "com.acme.two", "com.example.a", "com.example.b", "com.example.scores",
                      "com.example.watch", "com.example.z"] + (0..<24).map { "com.example.app\($0)" }
    package static let declared = try! DeclaredApps(ids)
}

/// A clock the test moves by hand, so expiry is tested without sleeping.
package final class TestClock: WallClock {
    private let milliseconds: Mutex<Int64>

    /// Starts at a fixed instant (2026-01-01T00:00:00Z) far from bucket edges' surprises.
    package init(milliseconds: Int64 = 1_767_225_600_000) { self.milliseconds = Mutex(milliseconds) }

    package func now() -> Timestamp { Timestamp(milliseconds: milliseconds.withLock { $0 }) }

    package func advance(seconds: Int64) { milliseconds.withLock { $0 += seconds * 1000 } }

    package func advance(milliseconds delta: Int64) { milliseconds.withLock { $0 += delta } }
}

/// Which backend a store under test runs on. The contract suite runs on
/// `current`: LMDB, unless `REGISTRY_TEST_BACKEND=postgres` (then
/// `REGISTRY_TEST_POSTGRES_URL` names the server; `tools/test` runs the
/// contract suite once per backend). Each engine's own suite names its
/// backend.
package enum TestBackend: Sendable {
    case lmdb
    case postgres(url: String)

    /// The test server `REGISTRY_TEST_POSTGRES_URL` names, if any.
    package static let postgres: TestBackend? = ProcessInfo.processInfo.environment["REGISTRY_TEST_POSTGRES_URL"].map { .postgres(url: $0) }

    package static let current: TestBackend = {
        let environment = ProcessInfo.processInfo.environment
        guard environment["REGISTRY_TEST_BACKEND"] == "postgres" else { return .lmdb }
        guard let url = environment["REGISTRY_TEST_POSTGRES_URL"] else {
            fatalError("REGISTRY_TEST_BACKEND=postgres needs REGISTRY_TEST_POSTGRES_URL (tools/pg-server start DIR prints one)")
        }
        return .postgres(url: url)
    }()

}

package extension Trait where Self == ConditionTrait {
    /// A test of the PostgreSQL store itself (many nodes, failures of the
    /// connection): skipped without a test server.
    static var requiresPostgres: Self {
        .enabled(if: TestBackend.postgres != nil, "needs REGISTRY_TEST_POSTGRES_URL (tools/test starts a server)")
    }

}

/// One store under test: LMDB in its own temporary directory, or PostgreSQL
/// in its own schema of the test server's database. The contract suite uses
/// only `store` (`any RegistryStore`); `lmdb` is for the LMDB store's own suite.
package final class StoreFixture {
    package let backend: TestBackend
    package let directory: String
    package let clock: TestClock
    package private(set) var configuration: LMDBRegistryStore.Configuration
    private var opened: any RegistryMaintenance
    /// The PostgreSQL schema this fixture's registry lives in.
    private let schema: String?
    package var store: any RegistryStore { opened }
    package var maintenance: any RegistryMaintenance { opened }

    /// Whether this store is the LMDB one (where the contract leaves room: key encodings, map sizes).
    package var isLMDB: Bool {
        if case .lmdb = backend { return true }
        return false
    }

    package var lmdb: LMDBRegistryStore {
        guard let lmdb = opened as? LMDBRegistryStore else { preconditionFailure("an LMDB-only test ran on another backend") }
        return lmdb
    }

    package init(on backend: TestBackend = .current, configure: (inout LMDBRegistryStore.Configuration) -> Void) throws {
        self.backend = backend
        directory = NSTemporaryDirectory() + "registry-tests-" + UUID().uuidString
        clock = TestClock()
        var configuration = LMDBRegistryStore.Configuration(directory: directory + "/env", tokenKeys: TestKeys.ring)
        configuration.clock = clock
        configuration.limits.apps = TestApps.declared
        configure(&configuration)
        self.configuration = configuration
        switch backend {
        case .lmdb:
            schema = nil
            opened = try LMDBRegistryStore(configuration: configuration)
        case .postgres(let url):
            let schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            let admin = try PostgresConnection(url)
            defer { admin.close() }
            try admin.query("CREATE SCHEMA \(schema)")
            self.schema = schema
            opened = try Self.openPostgres(url, schema, configuration)
        }
    }

    /// The test server's URL, narrowed to `schema`; its connections are
    /// named after it too, so a test can find (and kill) its own.
    private static func url(_ url: String, schema: String) -> String {
        url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D" + schema + "&application_name=" + schema
    }

    private static func openPostgres(_ url: String, _ schema: String, _ lmdb: LMDBRegistryStore.Configuration,
                                     poolSize: Int = 2) throws -> PostgresRegistryStore {
        var configuration = PostgresRegistryStore.Configuration(connectionString: Self.url(url, schema: schema),
                                                                tokenKeys: lmdb.tokenKeys)
        configuration.poolSize = poolSize
        configuration.reloadTokenKeys = lmdb.reloadTokenKeys
        configuration.limits = lmdb.limits
        configuration.clock = lmdb.clock
        configuration.onSweepBatch = lmdb.onSweepBatch
        configuration.onCommit = lmdb.onCommit
        return try PostgresRegistryStore(configuration: configuration)
    }

    /// Another registryd node on the same PostgreSQL registry (its own pool,
    /// the same configuration), for tests of many nodes; `configure`
    /// adjusts its configuration.
    package func anotherNode(poolSize: Int = 2,
                     _ configure: (inout LMDBRegistryStore.Configuration) -> Void = { _ in }) throws -> PostgresRegistryStore {
        guard case .postgres(let url) = backend, let schema else { preconditionFailure("a PostgreSQL-only test") }
        var configuration = self.configuration
        configure(&configuration)
        return try Self.openPostgres(url, schema, configuration, poolSize: poolSize)
    }

    /// A connection of its own to this fixture's registry (PostgreSQL only;
    /// the caller closes it): what an operator, or a fault, does beside the store.
    package func databaseConnection() throws -> PostgresConnection { try PostgresConnection(databaseURL) }

    /// The connection string of this fixture's registry (PostgreSQL only).
    package var databaseURL: String {
        guard case .postgres(let url) = backend, let schema else { preconditionFailure("a PostgreSQL-only test") }
        return Self.url(url, schema: schema)
    }

    /// The store's own consistency check (`RegistryMaintenance.check`), on either backend.
    package func check() async throws -> [String] { try await opened.check(limit: 100, progress: nil) }

    /// Changes the configuration the next `reopen()` uses.
    package func reconfigure(_ change: (inout LMDBRegistryStore.Configuration) -> Void) { change(&configuration) }

    /// Shuts the store down and opens it again on the same directory (or schema).
    package func reopen() throws {
        opened.shutdown()
        switch backend {
        case .lmdb: opened = try LMDBRegistryStore(configuration: configuration)
        case .postgres(let url): opened = try Self.openPostgres(url, schema ?? "", configuration)
        }
    }

    /// Breaks the store on purpose: `body`'s raw writes, in one LMDB write
    /// transaction beside the store's writer, touch a record or an index
    /// without the others that the store keeps in step with it.
    package func corrupt(_ body: (WriteTransaction, Schema) throws -> Void) throws {
        let schema = lmdb.schema
        try lmdb.environment.write { txn in try body(txn, schema) }
    }
    /// Every entry of every database but `meta`, by database name.
    package func entries() throws -> [String: [[UInt8]: [UInt8]]] {
        let schema = lmdb.schema
        let databases = [("devices", schema.devices), ("pushTokens", schema.pushTokens), ("pushToStart", schema.pushToStart),
                         ("activityTokens", schema.activityTokens), ("deviceActivities", schema.deviceActivities),
                         ("tokenOwners", schema.tokenOwners), ("expiry", schema.expiry), ("tombstones", schema.tombstones),
                         ("history", schema.history), ("ownerCleanup", schema.ownerCleanup)]
        return try lmdb.environment.read { txn in
            var all: [String: [[UInt8]: [UInt8]]] = [:]
            for (name, db) in databases {
                var entries: [[UInt8]: [UInt8]] = [:]
                try txn.scan(db) { key, value in
                    entries[key] = value
                    return true
                }
                all[name] = entries
            }
            return all
        }
    }

    /// Shuts down and removes the directory (or schema).
    package func close() {
        opened.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
        if case .postgres(let url) = backend, let schema, let admin = try? PostgresConnection(url) {
            _ = try? admin.query("DROP SCHEMA \(schema) CASCADE")
            admin.close()
        }
    }
}

/// The store under test (on `backend`), with a test clock.
package func makeStore(maxDevicesPerUser: Int = 20, on backend: TestBackend = .current,
               configure: (inout LMDBRegistryStore.Configuration) -> Void = { _ in }) throws -> StoreFixture {
    try StoreFixture(on: backend) { configuration in
        configuration.limits.maxDevicesPerUser = maxDevicesPerUser
        configure(&configuration)
    }
}

/// A store with a 10-hour device TTL and a 2-hour activity TTL.
package func makeExpiringStore(on backend: TestBackend = .current,
                               configure: (inout LMDBRegistryStore.Configuration) -> Void = { _ in }) throws -> StoreFixture {
    try makeStore(on: backend) { c in
        c.limits.deviceTTL = .seconds(10 * 3_600)
        c.limits.activityTTL = .seconds(2 * 3_600)
        configure(&c)
    }
}

/// A distinct valid APNs token (64 lowercase hex digits) for each `n`.
package func apnsToken(_ n: Int) -> String {
    let hex = String(n, radix: 16)
    return String(repeating: "0", count: 64 - hex.count) + hex
}

package extension RegistryStore {
    /// A launch upsert with a push token, the common case in tests.
    @discardableResult
    func register(_ user: String, _ device: String, token: Int? = nil, sequence: UInt64? = nil) async throws -> RegistrationOutcome {
        try await registerDevice(DeviceRegistration(userId: user, deviceId: device,
                                                    pushToken: token.map { .set(apnsToken($0)) } ?? .keep,
                                                    sequence: sequence))
    }

    /// The deviceIds of a user's devices, in list order.
    func deviceIds(_ user: String) async throws -> [String] {
        try await devices(userId: user).map(\.deviceId)
    }

    /// Every token of an activity, walking all pages.
    func allActivityTokens(_ activity: String, pageSize: Int = 1_000) async throws -> [ActivityToken] {
        var all: [ActivityToken] = []
        var cursor: String?
        repeat {
            let page = try await activityTokens(activityId: activity, limit: pageSize, cursor: cursor)
            all += page.tokens
            cursor = page.nextCursor
        } while cursor != nil
        return all
    }
}

/// Runs `body` and returns the `RegistryError` it threw, `nil` when it succeeded.
package func registryError(_ body: () async throws -> Void) async -> RegistryError? {
    do {
        try await body()
        return nil
    } catch let error as RegistryError {
        return error
    } catch {
        return .unavailable(reason: "unexpected error \(error)")
    }
}

/// What `body` returned, or the error it threw.
package func registryErrorOrValue<T>(_ body: () async throws -> T) async -> (value: T?, error: (any Error)?) {
    do {
        return (try await body(), nil)
    } catch {
        return (nil, error)
    }
}

/// Values reported from other threads (commit reports, sweep results), collected for assertions.
package final class Recorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])

    package init() {}

    package func record(_ value: Value) { values.withLock { $0.append(value) } }

    package var all: [Value] { values.withLock { $0 } }
}
