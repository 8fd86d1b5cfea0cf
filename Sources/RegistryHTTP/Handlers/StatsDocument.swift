import JSON
import RegistryCore

/// The JSON shapes of `/internal/v1/stats` and `/internal/v1/sweep`, shared
/// with `registryd stats --json` and `registryd sweep` so both print the
/// very same object.
public enum StatsDocument {
    public static func stats(_ s: StoreStats) -> JSONWriter.Value {
        .object([
            ("counts", .object([
                ("devices", .int(Int64(s.devices))),
                ("pushToStartTokens", .int(Int64(s.pushToStartTokens))),
                ("activityTokens", .int(Int64(s.activityTokens))),
                ("tombstones", .int(Int64(s.tombstones))),
                ("pushTokens", .int(Int64(s.pushTokens))),
            ])),
            ("mapSizeBytes", .int(Int64(s.reservedBytes))),
            ("usedBytes", .int(Int64(s.usedBytes))),
            ("lastSweepAt", s.lastSweepAt.map { .string(RFC3339.format($0)) } ?? .null),
        ])
    }

    public static func sweep(_ c: SweepCounts) -> JSONWriter.Value {
        .object([
            ("devices", .int(Int64(c.devices))),
            ("pushToStartTokens", .int(Int64(c.pushToStartTokens))),
            ("activityTokens", .int(Int64(c.activityTokens))),
            ("tombstones", .int(Int64(c.tombstones))),
        ])
    }
}
