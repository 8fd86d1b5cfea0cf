import Foundation
import LMDB
@testable import RegistryCore
@testable import RegistryLMDB
@testable import RegistryPostgres
import Synchronization
import Testing

/// Defects a code review found in the store, each pinned here before it was fixed.
struct ReviewFindingsTests {
    @Test func aReplayIsRefusedWhenItsPushTokenIsMalformed() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1, sequence: 5)
        let replay = DeviceRegistration(userId: "alice", deviceId: "d1", pushToken: .set("zz"), sequence: 5)
        let error = await registryError { _ = try await f.store.registerDevice(replay) }
        guard case .invalidField(let field, _)? = error else {
            Issue.record("expected invalidField, got \(String(describing: error))")
            return
        }
        #expect(field == "pushToken")
    }

    @Test func feedbackForAnUppercaseFCMTokenLeavesTheAPNsTokenWithTheSameLetters() async throws {
        let f = try makeStore(); defer { f.close() }
        let apns = apnsToken(0xABCDEF)
        let fcm = apns.uppercased()
        try await f.store.register("alice", "iphone", token: 0xABCDEF)
        _ = try await f.store.registerDevice(DeviceRegistration(userId: "bob", deviceId: "pixel", pushToken: .set(fcm),
                                                                platform: .fcm))
        #expect(try await f.store.removeToken(fcm, reason: .unregistered, registeredBefore: nil) == 1)
        #expect(try await f.store.device(userId: "alice", deviceId: "iphone")?.pushToken?.token == apns)
        #expect(try await f.store.device(userId: "bob", deviceId: "pixel")?.pushToken == nil)
    }

    @Test func feedbackStillMatchesAPNsTokensCaseInsensitively() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "iphone", token: 0xABCDEF)
        #expect(try await f.store.removeToken(apnsToken(0xABCDEF).uppercased(), reason: .unregistered,
                                              registeredBefore: nil) == 1)
    }

    /// A failed batch must end writing for good: commands that were queued
    /// behind it, and any submitted later, fail `unavailable` and never commit.
    @Test(.lmdbOnly) func commandsQueuedBehindAFailedCommitNeverCommit() async throws {
        let f = try makeStore(); defer { f.close() }
        let writer = f.lmdb.writer
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let failing = Task {
            try await writer.submit { _ -> Int in
                entered.signal()
                release.wait()
                throw LMDBError.panic
            }
        }
        await offThePool { entered.wait() }
        let store = f.store
        let queued = Task { try await store.register("alice", "queued", token: 1) }
        while writer.queuedCommands == 0 { try await Task.sleep(for: .milliseconds(1)) }
        release.signal()
        _ = await failing.result
        let error = await registryError { _ = try await queued.value }
        guard case .unavailable? = error else {
            Issue.record("expected unavailable, got \(String(describing: error))")
            return
        }
        let later = await registryError { try await f.store.register("alice", "later", token: 2) }
        guard case .unavailable? = later else {
            Issue.record("expected unavailable, got \(String(describing: later))")
            return
        }
        #expect(try await f.store.devices(userId: "alice").isEmpty)
    }

    /// SIGTERM must not wait for a whole sweep: stopping the sweeper ends
    /// the sweep between two bounded batches.
    @Test func stoppingTheSweeperEndsARunningSweepBetweenBatches() async throws {
        let f = try makeStore { c in
            c.limits.deviceTTL = .seconds(60)
            c.sweepBatchSize = 5
        }
        defer { f.close() }
        let records = (0..<3_000).map { i in
            ExportedRecord.device(DeviceRecord(
                userId: "u\(i)", deviceId: "d", platform: .apns, environment: .production, osVersion: nil,
                appVersion: nil, pushToken: nil, pushToStartToken: nil, activityCount: 0,
                createdAt: f.clock.now(), lastSeenAt: f.clock.now(), sequence: nil), activityTokens: [])
        }
        _ = try await f.maintenance.importRecords(records)
        f.clock.advance(seconds: 120)
        let sweeps = Recorder<Result<SweepCounts, any Error>>()
        let sweeper = Sweeper(store: f.store, interval: .milliseconds(1)) { result, _ in sweeps.record(result) }
        sweeper.start()
        while try await f.store.stats().devices == 3_000 { try await Task.sleep(for: .milliseconds(1)) }
        let waited = await offThePool {
            let stopping = ContinuousClock.now
            sweeper.stop()
            return ContinuousClock.now - stopping
        }
        #expect(waited < .seconds(1))
        #expect(try await f.store.stats().devices > 0, "the sweep ran to the end instead of stopping")
        #expect(sweeps.all.count == 1)
    }

    /// A dry run reads in bounded transactions, like the real sweep, and
    /// counts the same across batch boundaries.
    @Test(.lmdbOnly) func aDryRunCountsTheSameWithTinyBatches() async throws {
        let batches = Recorder<SweepBatchReport>()
        let f = try makeStore { c in
            c.limits.deviceTTL = .seconds(60)
            c.limits.activityTTL = .seconds(60)
            c.sweepBatchSize = 2
            c.onSweepBatch = { batches.record($0) }
        }
        defer { f.close() }
        for i in 0..<7 {
            _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
                activityId: "m\(i % 3)", userId: "u\(i)", deviceId: "d", token: apnsToken(i)))
            try await f.store.signOut(userId: "u\(i)", deviceId: "gone", sequence: 1)
        }
        f.clock.advance(seconds: 120)
        let dry = try await f.store.sweep(dryRun: true)
        #expect(batches.all.filter(\.dryRun).count > 3, "a dry run reads in bounded transactions")
        #expect(try await f.store.sweep(dryRun: false) == dry)
        #expect(dry == SweepCounts(devices: 7, pushToStartTokens: 0, activityTokens: 7, tombstones: 7))
    }

    /// A backup holds every token: owner-only, whatever the umask.
    @Test(.lmdbOnly) func aBackupIsOwnerOnlyWhateverTheUmask() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        let target = f.directory + "/backup"
        let previous = umask(0o022)
        defer { umask(previous) }
        try f.lmdb.backup(toDirectory: target)
        let folder = try FileManager.default.attributesOfItem(atPath: target)
        let file = try FileManager.default.attributesOfItem(atPath: target + "/data.mdb")
        #expect((folder[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        #expect((file[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }
}
