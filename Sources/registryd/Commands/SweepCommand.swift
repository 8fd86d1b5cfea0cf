import Foundation
import JSON
import RegistryCore
import RegistryHTTP

/// `registryd sweep [--dry-run]`: one sweep now, with the configured TTLs;
/// prints what it removed (or would remove) as JSON. It opens the store
/// itself (not through `OperatorCommand`) to hand each sweep step's counts
/// to its progress line.
enum SweepCommand: Subcommand {
    static let help = CommandHelp(
        name: "sweep", synopsis: "[--dry-run] [--data-dir DIR] [--device-ttl D] [--activity-ttl D]",
        tagline: "sweep expired records now",
        summary: """
            Deletes now what the TTLs have expired (devices not seen for --device-ttl with their
            tokens, activity tokens not refreshed for --activity-ttl, tombstones as old as the
            device TTL), in the same short steps as the server's sweeper, so a running server
            keeps answering, and prints the counts. Give it the TTLs the server runs with.
            With --store postgres one sweep runs at a time across all servers: while another
            one is sweeping, this one removes nothing and prints zeros.
            """,
        flags: ["dry-run"] + Flags.store,
        example: """
            registryd sweep --dry-run --data-dir /var/lib/registryd --device-ttl 90d
            {"devices":12,"pushToStartTokens":3,"activityTokens":40,"tombstones":2}
            """)

    static func run(_ arguments: Arguments) throws -> Int32 {
        let settings = try Settings(arguments)
        let dryRun = arguments.isSet("dry-run")
        let progress = ProgressLine(dryRun ? "sweep (dry run)" : "sweep", unit: .records, total: nil)
        let store = try settings.openStore(.existing) { step in
            let c = step.counts
            progress.advance(by: c.devices + c.pushToStartTokens + c.activityTokens + c.tombstones)
        }
        defer { store.shutdown() }
        let counts = try Blocking.result { try await store.sweep(dryRun: dryRun) }.get()
        progress.finish()
        print(String(decoding: JSONWriter.encode(StatsDocument.sweep(counts)), as: UTF8.self))
        return 0
    }
}
