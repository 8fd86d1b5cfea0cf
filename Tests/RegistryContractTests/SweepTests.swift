import Foundation
import RegistryCore
import RegistryLMDB
import RegistryTestSupport
import RegistrydTestSupport
import Testing

/// Expiry: what a sweep removes, dry runs, re-checks, bounded batches, the sweeper thread.
struct SweepTests {
    private static let hour: Int64 = 3_600

    @Test func removesDevicesNotSeenForTheTTLWithTheirTokensCounted() async throws {
        let f = try makeExpiringStore(); defer { f.close() }
        try await f.store.register("alice", "old", token: 1)
        _ = try await f.store.registerPushToStartToken(PushToStartRegistration(userId: "alice", deviceId: "old", token: apnsToken(2)))
        for activity in ["m1", "m2"] {
            _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
                activityId: activity, userId: "alice", deviceId: "old", token: apnsToken(activity == "m1" ? 3 : 4)))
        }
        f.clock.advance(seconds: 9 * Self.hour)
        try await f.store.register("alice", "recent", token: 5)
        f.clock.advance(seconds: Self.hour + 1)
        let counts = try await f.store.sweep(dryRun: false)
        #expect(counts == SweepCounts(devices: 1, pushToStartTokens: 1, activityTokens: 2, tombstones: 0))
        #expect(try await f.store.deviceIds("alice") == ["recent"])
        let stats = try await f.store.stats()
        #expect(stats.pushTokens == 1 && stats.pushToStartTokens == 0 && stats.activityTokens == 0)
    }

    /// A swept device's tokens belong to no one: feedback for them removes
    /// nothing, another device registers them, and feedback then removes
    /// them from that device.
    @Test func sweptTokensAreFreeForAnotherDevice() async throws {
        let f = try makeExpiringStore(); defer { f.close() }
        try await f.store.register("alice", "old", token: 1)
        _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
            activityId: "m", userId: "alice", deviceId: "old", token: apnsToken(2)))
        f.clock.advance(seconds: 10 * Self.hour + 1)
        #expect(try await f.store.sweep(dryRun: false) == SweepCounts(devices: 1, activityTokens: 1))
        #expect(try await f.store.removeToken(apnsToken(1), reason: .unregistered, registeredBefore: nil) == 0)
        #expect(try await f.store.register("bob", "d1", token: 1).created)
        _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
            activityId: "m", userId: "bob", deviceId: "d1", token: apnsToken(2)))
        #expect(try await f.store.allActivityTokens("m").map(\.userId) == ["bob"])
        #expect(try await f.store.removeToken(apnsToken(1), reason: .unregistered, registeredBefore: nil) == 1)
        #expect(try await f.store.removeToken(apnsToken(2), reason: .unregistered, registeredBefore: nil) == 1)
        #expect(try await f.check() == [])
    }

    @Test func removesActivityTokensNotRefreshedAndKeepsTheirDevice() async throws {
        let f = try makeExpiringStore(); defer { f.close() }
        _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
            activityId: "m", userId: "alice", deviceId: "d1", token: apnsToken(1)))
        f.clock.advance(seconds: Self.hour)
        _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
            activityId: "m", userId: "alice", deviceId: "d2", token: apnsToken(2)))
        f.clock.advance(seconds: Self.hour + 60)
        #expect(try await f.store.sweep(dryRun: false) == SweepCounts(activityTokens: 1))
        #expect(try await f.store.allActivityTokens("m").map(\.deviceId) == ["d2"])
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.activityCount == 0)
    }

    @Test func removesTombstonesOlderThanTheDeviceTTL() async throws {
        let f = try makeExpiringStore(); defer { f.close() }
        try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: 9)
        f.clock.advance(seconds: 5 * Self.hour)
        #expect(try await f.store.sweep(dryRun: false) == SweepCounts())
        #expect(await registryError { try await f.store.register("alice", "d1", sequence: 3) } == .staleWrite)
        f.clock.advance(seconds: 5 * Self.hour)
        #expect(try await f.store.sweep(dryRun: false) == SweepCounts(tombstones: 1))
        #expect(try await f.store.register("alice", "d1", sequence: 3).created)
    }

    @Test func dryRunCountsTheSameAndWritesNothing() async throws {
        let f = try makeExpiringStore(); defer { f.close() }
        for i in 0..<5 {
            try await f.store.register("u\(i)", "d", token: i)
            _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
                activityId: "m", userId: "u\(i)", deviceId: "d", token: apnsToken(100 + i)))
        }
        try await f.store.signOut(userId: "u0", deviceId: "d", sequence: 1)
        f.clock.advance(seconds: 3 * Self.hour)
        try await f.store.register("u1", "d")
        f.clock.advance(seconds: 8 * Self.hour)
        let before = try await f.store.stats()
        let dry = try await f.store.sweep(dryRun: true)
        #expect(try await Self.counts(f.store.stats()) == Self.counts(before))
        #expect(dry == SweepCounts(devices: 3, activityTokens: 4, tombstones: 1))
        #expect(try await f.store.sweep(dryRun: false) == dry)
    }

    @Test func recordRefreshedAfterTheCutoffSurvives() async throws {
        let f = try makeExpiringStore(); defer { f.close() }
        f.clock.advance(seconds: 60)
        try await f.store.register("alice", "stale")
        try await f.store.register("alice", "refreshed")
        f.clock.advance(seconds: 10 * 60)
        try await f.store.register("alice", "refreshed")
        // Both sit in the same hour bucket of the index; only the exact lastSeenAt tells them apart.
        f.clock.advance(seconds: 10 * Self.hour - 5 * 60)
        #expect(try await f.store.sweep(dryRun: true) == SweepCounts(devices: 1))
        #expect(try await f.store.sweep(dryRun: false) == SweepCounts(devices: 1))
        #expect(try await f.store.deviceIds("alice") == ["refreshed"])
    }

    @Test func sweepRecordsLastSweepAtButDryRunDoesNot() async throws {
        let f = try makeExpiringStore(); defer { f.close() }
        _ = try await f.store.sweep(dryRun: true)
        #expect(try await f.store.stats().lastSweepAt == nil)
        _ = try await f.store.sweep(dryRun: false)
        let at = f.clock.now()
        try f.reopen()
        #expect(try await f.store.stats().lastSweepAt == at)
    }

    @Test func sweeperSweepsEveryIntervalAndStopsPromptly() async throws {
        let f = try makeExpiringStore(); defer { f.close() }
        try await f.store.register("alice", "d1")
        f.clock.advance(seconds: 11 * Self.hour)
        let reports = Recorder<SweepCounts>()
        let sweeper = Sweeper(store: f.store, interval: .milliseconds(20)) { result, _ in
            if case .success(let counts) = result { reports.record(counts) }
        }
        sweeper.start()
        let deadline = ContinuousClock.now + .seconds(10)
        while reports.all.count < 2 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        await offThePool { sweeper.stop() }
        let seen = reports.all
        #expect(seen.count >= 2)
        #expect(seen.first == SweepCounts(devices: 1))
        #expect(try await f.store.stats().devices == 0)

        let idle = Sweeper(store: f.store, interval: .seconds(3_600)) { _, _ in }
        idle.start()
        let stopStarted = ContinuousClock.now
        await offThePool { idle.stop() }
        #expect(ContinuousClock.now - stopStarted < .seconds(1))
    }

    /// What `stats()` counts, without the bytes used (which a database may
    /// change on its own, e.g. PostgreSQL's autovacuum).
    private static func counts(_ s: StoreStats) -> [Int] {
        [s.devices, s.pushTokens, s.pushToStartTokens, s.activityTokens, s.tombstones, s.historyEvents]
    }
}
