import Foundation
import JSON
import Postgres
import RegistryCore
import RegistryPostgres
import RegistryLMDB
import RegistryHTTP

/// `registryd stats [--json]`: record counts and map usage, as a table or as
/// the JSON document `/internal/v1/stats` answers.
enum StatsCommand: OperatorCommand {
    static let help = CommandHelp(
        name: "stats", synopsis: "[--json] [--data-dir DIR]", tagline: "print record counts and storage use",
        summary: """
            Prints record counts and storage use of the registry in --data-dir, or with --store
            postgres in the database --postgres-url names (also while servers run on it).
            """,
        flags: ["json"] + Flags.store,
        example: """
            registryd stats --data-dir /var/lib/registryd
            devices            100000
            pushTokens         100000
            pushToStartTokens  100000
            activityTokens     110000
            tombstones         0
            mapSizeBytes       268435456
            usedBytes          128397312
            lastSweepAt        2026-12-03T09:00:00.000Z
            """)

    static func run(_ store: any RegistryMaintenance, _ settings: Settings, _ arguments: Arguments) throws -> Int32 {
        print(try Blocking.result { try await store.stats() }.get(), json: arguments.isSet("json"))
        return 0
    }

    /// Counts open no token: without the token key file (a backup kept
    /// apart from its keys, say) they are read without opening the store.
    static func runWithoutStore(_ settings: Settings, _ arguments: Arguments) throws -> Int32? {
        guard !FileManager.default.fileExists(atPath: settings.tokenKeyFilePath) else { return nil }
        let stats: StoreStats
        switch settings.backend {
        case .lmdb:
            guard FileManager.default.fileExists(atPath: settings.layout.lmdb) else {
                throw Arguments.Failure(description: "--data-dir: no registry at '\(settings.dataDirectory)'")
            }
            stats = try LMDBRegistryStore.statsWithoutTokenKeys(directory: settings.layout.lmdb)
        case .postgres(let url, _):
            do {
                stats = try PostgresRegistryStore.statsWithoutTokenKeys(connectionString: url.text)
            } catch let error as PostgresError {
                throw Settings.failure(error, url)
            }
        }
        Command.printError("registryd stats: no token key file at '\(settings.tokenKeyFilePath)'; counts need none")
        print(stats, json: arguments.isSet("json"))
        return 0
    }

    private static func print(_ stats: StoreStats, json: Bool) {
        if json {
            Swift.print(String(decoding: JSONWriter.encode(StatsDocument.stats(stats)), as: UTF8.self))
        } else {
            Swift.print("""
                devices            \(stats.devices)
                pushTokens         \(stats.pushTokens)
                pushToStartTokens  \(stats.pushToStartTokens)
                activityTokens     \(stats.activityTokens)
                tombstones         \(stats.tombstones)
                mapSizeBytes       \(stats.reservedBytes)
                usedBytes          \(stats.usedBytes)
                lastSweepAt        \(stats.lastSweepAt.map(RFC3339.format) ?? "never")
                """)
        }
    }
}
