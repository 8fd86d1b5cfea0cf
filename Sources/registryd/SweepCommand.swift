import Foundation
import JSON
import Registry
import RegistryHTTP

/// `registryd sweep [--dry-run]`: one sweep now, with the configured TTLs;
/// prints what it removed (or would remove) as JSON.
enum SweepCommand: OperatorCommand {
    static func run(_ store: LMDBRegistryStore, _ arguments: Arguments) throws -> Int32 {
        let counts = try Blocking.result { try await store.sweep(dryRun: arguments.isSet("dry-run")) }.get()
        print(String(decoding: JSONWriter.encode(StatsDocument.sweep(counts)), as: UTF8.self))
        return 0
    }
}
