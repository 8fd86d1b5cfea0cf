import Foundation
import LMDB
@testable import RegistryCore
@testable import RegistryLMDB
@testable import RegistryPostgres
import Synchronization
import RegistryTestSupport
import RegistrydTestSupport
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

    /// SIGTERM must not wait for a whole sweep: stopping the sweeper ends
    /// the sweep between two bounded batches.
    @Test func stoppingTheSweeperEndsARunningSweepBetweenBatches() async throws {
        let batches = Recorder<SweepBatchReport>()
        let stopping = Recorder<Bool>()
        let firstBatch = DispatchSemaphore(value: 0)
        let f = try makeStore { c in
            c.limits.deviceTTL = .seconds(60)
            c.sweepBatchSize = 5
            c.onSweepBatch = { report in
                batches.record(report)
                if batches.all.count == 1 { firstBatch.signal() }
                // Each step waits until the test stops the sweeper, then
                // takes 10 ms: a fast machine otherwise finishes all 600
                // steps before the test can call stop, and running to the
                // end would then need 6 s between the test's two lines.
                let deadline = ContinuousClock.now + .seconds(30)
                while stopping.all.isEmpty && ContinuousClock.now < deadline { usleep(1_000) }
                usleep(10_000)
            }
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
        await offThePool { firstBatch.wait() }
        let waited = await offThePool {
            let began = ContinuousClock.now
            stopping.record(true)
            sweeper.stop()
            return ContinuousClock.now - began
        }
        #expect(waited < .seconds(1))
        #expect(try await f.store.stats().devices > 0, "the sweep ran to the end instead of stopping")
        #expect(sweeps.all.count == 1)
    }

}
