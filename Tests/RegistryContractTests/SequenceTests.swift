import RegistryCore
import RegistryTestSupport
import Testing

/// The per-(user, device) `sequence`, shared by the three registrations and the sign-out.
struct SequenceTests {
    @Test func registerWithoutSequenceIsAlwaysApplied() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1, sequence: 5)
        let d = try await f.store.register("alice", "d1", token: 2).device
        #expect(d.pushToken?.token == apnsToken(2) && d.sequence == 5)
    }

    @Test func olderSequenceIsStaleAndChangesNothing() async throws {
        let f = try makeStore(); defer { f.close() }
        let stored = try await f.store.register("alice", "d1", token: 1, sequence: 5).device
        f.clock.advance(seconds: 10)
        let error = await registryError { try await f.store.register("alice", "d1", token: 2, sequence: 4) }
        #expect(error == .staleWrite)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1") == stored)
    }

    @Test func equalSequenceIsAReplayThatOnlyRefreshesLastSeen() async throws {
        let f = try makeStore(); defer { f.close() }
        let stored = try await f.store.register("alice", "d1", token: 1, sequence: 5).device
        f.clock.advance(seconds: 10)
        let replay = try await f.store.registerDevice(DeviceRegistration(
            userId: "alice", deviceId: "d1", pushToken: .set(apnsToken(2)), osVersion: "19", sequence: 5))
        var expected = stored
        expected.lastSeenAt = f.clock.now()
        #expect(!replay.created)
        #expect(replay.device == expected)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1") == expected)
    }

    @Test func newerSequenceIsAppliedAndStored() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1, sequence: 5)
        let d = try await f.store.register("alice", "d1", token: 2, sequence: 6).device
        #expect(d.sequence == 6 && d.pushToken?.token == apnsToken(2))
    }

    @Test func sequenceIsSharedByAllRegistrationKinds() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", sequence: 5)
        let p2s = await registryError {
            _ = try await f.store.registerPushToStartToken(PushToStartRegistration(
                userId: "alice", deviceId: "d1", token: apnsToken(1), sequence: 4))
        }
        #expect(p2s == .staleWrite)
        _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
            activityId: "m", userId: "alice", deviceId: "d1", token: apnsToken(2), sequence: 5))
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.activityCount == 0, "a replay stores no token")
        _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
            activityId: "m", userId: "alice", deviceId: "d1", token: apnsToken(2), sequence: 6))
        let d = try #require(try await f.store.device(userId: "alice", deviceId: "d1"))
        #expect(d.activityCount == 1 && d.sequence == 6)
    }

    @Test func signOutTombstoneRejectsEqualOrOlderRegisters() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1, sequence: 5)
        try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: 7)
        for sequence: UInt64 in [6, 7] {
            #expect(await registryError { try await f.store.register("alice", "d1", token: 1, sequence: sequence) } == .staleWrite)
            #expect(await registryError {
                _ = try await f.store.registerPushToStartToken(PushToStartRegistration(
                    userId: "alice", deviceId: "d1", token: apnsToken(1), sequence: sequence))
            } == .staleWrite)
        }
        #expect(try await f.store.device(userId: "alice", deviceId: "d1") == nil)
        let back = try await f.store.register("alice", "d1", token: 1, sequence: 8)
        #expect(back.created && back.device.sequence == 8)
    }

    @Test func tombstoneRejectsEqualOrOlderDeletes() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: 7)
        #expect(await registryError { try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: 7) } == .staleWrite)
        #expect(await registryError { try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: 3) } == .staleWrite)
        try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: nil)
        try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: 9)
        #expect(await registryError { try await f.store.register("alice", "d1", sequence: 8) } == .staleWrite)
        #expect(try await f.store.stats().tombstones == 1)
    }

    @Test func deleteOlderThanTheStoredRecordIsStaleAndKeepsIt() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1, sequence: 5)
        #expect(await registryError { try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: 4) } == .staleWrite)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1") != nil)
        #expect(try await f.store.stats().tombstones == 0)
    }

    @Test func deleteWithTheStoredSequenceSignsOut() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1, sequence: 5)
        try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: 5)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1") == nil)
        #expect(await registryError { try await f.store.register("alice", "d1", sequence: 5) } == .staleWrite)
    }

    @Test func registerWithoutSequenceIgnoresTheTombstone() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: 7)
        #expect(try await f.store.register("alice", "d1").created)
    }

    @Test func largestSequenceIsAccepted() async throws {
        let f = try makeStore(); defer { f.close() }
        #expect(try await f.store.register("alice", "d1", sequence: .max).device.sequence == .max)
        #expect(await registryError { try await f.store.register("alice", "d1", sequence: .max - 1) } == .staleWrite)
    }
}
