import Foundation
import TokenSealing
import LMDB
@testable import RegistryCore
@testable import RegistryLMDB
@testable import RegistryPostgres
import RegistryTestSupport
import Testing

/// Every index is written in the same transaction as its record: after any
/// mix of operations, the store's own check finds the indexes in step.
struct IndexConsistencyTests {
    @Test func indexesStayInStepThroughEveryKindOfWrite() async throws {
        let f = try makeStore(maxDevicesPerUser: 3) { c in
            c.limits.deviceTTL = .seconds(10 * 3_600)
            c.limits.activityTTL = .seconds(2 * 3_600)
        }
        defer { f.close() }
        let s = f.store
        for i in 0..<6 {
            try await s.register("u\(i % 2)", "d\(i)", token: i)
            _ = try await s.registerPushToStartToken(PushToStartRegistration(userId: "u\(i % 2)", deviceId: "d\(i)", token: apnsToken(100 + i)))
            _ = try await s.registerActivityToken(ActivityTokenRegistration(
                activityId: "m\(i % 3)", userId: "u\(i % 2)", deviceId: "d\(i)", token: apnsToken(200 + i)))
            f.clock.advance(seconds: 600)
        }
        try await s.register("u0", "d0", token: 50)                      // rotation (recreated after eviction)
        try await s.register("u1", "new", token: 3)                      // reinstall
        try await s.register("u9", "d4", token: 4)                       // account switch
        _ = try await s.registerActivityToken(ActivityTokenRegistration(
            activityId: "m9", userId: "u9", deviceId: "d4", token: apnsToken(202)))   // activity token moves
        _ = try await s.registerDevice(DeviceRegistration(userId: "u0", deviceId: "d2", pushToken: .remove))
        try await s.signOut(userId: "u1", deviceId: "d5", sequence: 4)
        _ = try await s.removeToken(apnsToken(104), reason: .unregistered, registeredBefore: nil)
        try await s.removePushToStartToken(userId: "u0", deviceId: "d2")
        #expect(try await f.check() == [])
        f.clock.advance(seconds: 3 * 3_600)
        _ = try await s.sweep(dryRun: false)
        #expect(try await f.check() == [])
        f.clock.advance(seconds: 20 * 3_600)
        _ = try await s.sweep(dryRun: false)
        #expect(try await f.check() == [])
        // Every record went; the history keeps why (the sweep's `expired` events among them).
        let stats = try await s.stats()
        #expect(stats == StoreStats(devices: 0, pushTokens: 0, pushToStartTokens: 0, activityTokens: 0, tombstones: 0,
                                    historyEvents: stats.historyEvents, reservedBytes: stats.reservedBytes,
                                    usedBytes: stats.usedBytes, lastSweepAt: f.clock.now()))
        #expect(stats.historyEvents > 0)
    }

}
