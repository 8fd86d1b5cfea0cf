import Foundation
import JSON
import Registry
import RegistryHTTP

/// `registryd stats [--json]`: record counts and map usage, as a table or as
/// the JSON document `/internal/v1/stats` answers.
enum StatsCommand: OperatorCommand {
    static func run(_ store: LMDBRegistryStore, _ arguments: Arguments) throws -> Int32 {
        let stats = try store.stats()
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
