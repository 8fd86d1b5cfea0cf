import Foundation
import TokenSealing
import LMDB
@testable import RegistryCore
@testable import RegistryLMDB
@testable import RegistryPostgres
import RegistryTestSupport
import Testing

/// Group commit under load, crash recovery, map growth, storage limits,
/// corrupt values, schema versions, shutdown and backup.
struct DurabilityTests {
    @Test func concurrentWritersGetExactlyWhatWasCommitted() async throws {
        let commits = Recorder<Int>()
        let f = try makeStore(maxDevicesPerUser: 100) { $0.onCommit = { commits.record($0.commands) } }
        defer { f.close() }
        let store = f.store
        let outcomes = try await withThrowingTaskGroup(of: [RegistrationOutcome].self) { group in
            for task in 0..<64 {
                group.addTask {
                    var outcomes: [RegistrationOutcome] = []
                    for i in 0..<50 {
                        outcomes.append(try await store.registerDevice(DeviceRegistration(
                            userId: "user-\(task)", deviceId: "device-\(task)-\(i)",
                            pushToken: .set(apnsToken(task * 50 + i)), osVersion: "\(i)", sequence: UInt64(i))))
                    }
                    return outcomes
                }
            }
            var all: [RegistrationOutcome] = []
            for try await part in group { all += part }
            return all
        }
        #expect(outcomes.count == 3_200 && outcomes.allSatisfy(\.created))
        for outcome in outcomes {
            #expect(try await store.device(userId: outcome.device.userId, deviceId: outcome.device.deviceId) == outcome.device)
        }
        #expect(try await store.stats().devices == 3_200)
        if f.isLMDB {
            #expect(commits.all.reduce(0, +) >= 3_200)
            #expect(commits.all.count < 3_200, "concurrent submissions share commits")
        }
    }


    @Test func statsCountEveryDatabase() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.register("alice", "d2")
        _ = try await f.store.registerPushToStartToken(PushToStartRegistration(userId: "alice", deviceId: "d1", token: apnsToken(2)))
        _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
            activityId: "m", userId: "alice", deviceId: "d2", token: apnsToken(3)))
        try await f.store.signOut(userId: "bob", deviceId: "x", sequence: 1)
        let stats = try await f.store.stats()
        #expect(stats.devices == 2 && stats.pushTokens == 1 && stats.pushToStartTokens == 1)
        #expect(stats.activityTokens == 1 && stats.tombstones == 1 && stats.lastSweepAt == nil)
        #expect(stats.usedBytes > 0)
        if f.isLMDB { #expect(stats.reservedBytes == 64 << 20) }
    }
}
