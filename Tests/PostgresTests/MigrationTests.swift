import Foundation
import Postgres
import Testing

/// Versioned migrations: applied once, in order, atomically, under a lock.
@Suite(.enabled(if: TestServer.isAvailable, TestServer.skipReason))
struct MigrationTests {
    /// A fresh schema, and the URL whose search_path is that schema.
    private func makeSchema() throws -> (schema: String, url: String) {
        let schema = TestServer.uniqueName("migrations")
        try TestServer.connect().query("CREATE SCHEMA \(schema)")
        return (schema, TestServer.url(searchPath: schema))
    }

    private func recorded(_ schema: String) throws -> [Int64] {
        let result = try TestServer.connect().query("SELECT version FROM \(schema).schema_migrations ORDER BY version")
        return try (0..<result.rowCount).map { try result.int64($0, 0)! }
    }

    private static let first: [PostgresMigration] = [
        // The sleep keeps the first node inside the lock while the second arrives.
        PostgresMigration(version: 10, sql: "CREATE TABLE items (id int8 PRIMARY KEY); SELECT pg_sleep(0.3)"),
        PostgresMigration(version: 20, sql: "INSERT INTO items VALUES (1)"),
        PostgresMigration(version: 30, sql: "ALTER TABLE items ADD COLUMN name text NOT NULL DEFAULT 'x'"),
    ]

    @Test func twoNodesStartingTogetherApplyMigrationsOnce() async throws {
        let (schema, url) = try makeSchema()
        let lockKey = PostgresConnection.advisoryKey(schema)
        let nodeA = PostgresPool(connectionString: url, size: 2)
        let nodeB = PostgresPool(connectionString: url, size: 2)
        let migrations = PostgresMigrations(Self.first, lockKey: lockKey)
        async let a = migrations.apply(on: nodeA)
        async let b = migrations.apply(on: nodeB)
        let outcomes = try await [a, b]
        #expect(outcomes.map(\.applied).sorted { $0.count < $1.count } == [[], [10, 20, 30]])
        #expect(outcomes.allSatisfy { $0.current == 30 && $0.unknown.isEmpty })
        #expect(try recorded(schema) == [10, 20, 30])
        // Migration 20's insert ran once (a second run would have hit the primary key).
        #expect(try TestServer.connect().query("SELECT count(*) FROM \(schema).items").int64(0, 0) == 1)

        // A restart applies nothing; a new migration at the end applies alone.
        #expect(try await migrations.apply(on: nodeA).applied == [])
        let next = PostgresMigrations(Self.first + [PostgresMigration(version: 40, sql: "CREATE INDEX ON items (name)")],
                                      lockKey: lockKey)
        #expect(try await next.apply(on: nodeB) == .init(applied: [40], unknown: [], current: 40))
        // An older build sees a version it does not know, and is told.
        #expect(try await migrations.apply(on: nodeA) == .init(applied: [], unknown: [40], current: 40))
        await nodeA.close()
        await nodeB.close()
    }

    @Test func aFailingMigrationLeavesNothingOfTheCall() async throws {
        let (schema, url) = try makeSchema()
        let pool = PostgresPool(connectionString: url, size: 1)
        let migrations = PostgresMigrations([
            PostgresMigration(version: 1, sql: "CREATE TABLE kept (v int8)"),
            PostgresMigration(version: 2, sql: "CREATE TABLE lost (v int8); INSERT INTO lost VALUES ('not a number')"),
        ], lockKey: PostgresConnection.advisoryKey(schema))
        await #expect { try await migrations.apply(on: pool) } throws: { ($0 as? PostgresError)?.sqlState == "22P02" }
        let tables = try TestServer.connect().query(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1", [.text(schema)])
        #expect(try tables.int64(0, 0) == 0, "neither kept, lost nor schema_migrations survived")
        await pool.close()
    }

    @Test func aMigrationInsertedBeforeAnAppliedOneIsRefused() async throws {
        let (schema, url) = try makeSchema()
        let connection = try PostgresConnection(url)
        let lockKey = PostgresConnection.advisoryKey(schema)
        _ = try PostgresMigrations(Self.first, lockKey: lockKey).apply(on: connection)
        let late = PostgresMigrations([Self.first[0], PostgresMigration(version: 15, sql: "SELECT 1")] + Self.first[1...],
                                      lockKey: lockKey)
        #expect { try late.apply(on: connection) } throws: { ($0 as? PostgresError)?.kind == .migrationRefused }
        #expect(try recorded(schema) == [10, 20, 30])
    }
}
