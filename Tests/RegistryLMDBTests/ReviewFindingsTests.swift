import Foundation
import LMDB
@testable import RegistryCore
@testable import RegistryLMDB
import RegistryTestSupport
import RegistrydTestSupport
import Testing
import TokenSealing

/// Review findings about the LMDB store itself, each pinned by a test that failed first.
struct ReviewFindingsTests {
    /// A failed batch must end writing for good: commands that were queued
    /// behind it, and any submitted later, fail `unavailable` and never commit.
    @Test func commandsQueuedBehindAFailedCommitNeverCommit() async throws {
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

    /// A dry run reads in bounded transactions, like the real sweep, and
    /// counts the same across batch boundaries.
    @Test func aDryRunCountsTheSameWithTinyBatches() async throws {
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
    @Test func aBackupIsOwnerOnlyWhateverTheUmask() async throws {
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
