import Foundation
import JSON
import Registry
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
        let stats = try Blocking.result { try await store.stats() }.get()
        if arguments.isSet("json") {
            print(String(decoding: JSONWriter.encode(StatsDocument.stats(stats)), as: UTF8.self))
        } else {
            print("""
                devices            \(stats.devices)
                pushTokens         \(stats.pushTokens)
                pushToStartTokens  \(stats.pushToStartTokens)
                activityTokens     \(stats.activityTokens)
                tombstones         \(stats.tombstones)
                mapSizeBytes       \(stats.mapSizeBytes)
                usedBytes          \(stats.usedBytes)
                lastSweepAt        \(stats.lastSweepAt.map(RFC3339.format) ?? "never")
                """)
        }
        return 0
    }
}
