import Crypto
import RegistryCore
import RegistryTestSupport
import Testing

/// docs/api.md "Token history": `history(userId:limit:)`, one event per token
/// that comes, changes or goes, with the reason it went.
struct HistoryTests {
    private static let hour: Int64 = 3_600

    // MARK: Actions

    @Test func aNewTokenIsRegisteredAndAReplacementIsRotated() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        f.clock.advance(seconds: 1)
        try await f.store.register("alice", "d1", token: 2)
        let events = try await f.store.history(userId: "alice", limit: 100)
        #expect(events.map { EventShape($0, withFingerprint: true) } == [
            EventShape("d1", .push, .rotated, fingerprint: KnownFingerprint.apns2),
            EventShape("d1", .push, .registered, fingerprint: KnownFingerprint.apns1),
        ])
        #expect(events.map(\.at) == [f.clock.now(), f.clock.now().adding(seconds: -1)])
        #expect(events.allSatisfy { $0.userId == "alice" && $0.reason == nil && $0.feedbackReason == nil })
    }

    @Test func pushToStartAndActivityTokensAreRegisteredAndRotatedToo() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.registerPushToStart("alice", "d1", token: 1)
        try await f.store.registerPushToStart("alice", "d1", token: 2)
        try await f.store.registerActivity("m", "alice", "d1", token: 3)
        try await f.store.registerActivity("m", "alice", "d1", token: 4)
        #expect(try await f.store.historyShapes("alice") == [
            EventShape("d1", .activity, activityId: "m", .rotated),
            EventShape("d1", .activity, activityId: "m", .registered),
            EventShape("d1", .pushToStart, .rotated),
            EventShape("d1", .pushToStart, .registered),
        ])
    }

    @Test func aReRegistrationThatChangesNothingWritesNoEvent() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.registerPushToStart("alice", "d1", token: 2)
        try await f.store.registerActivity("m", "alice", "d1", token: 3)
        #expect(try await f.store.history(userId: "alice", limit: 100).count == 3)
        f.clock.advance(seconds: 60)
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.register("alice", "d1")
        try await f.store.registerPushToStart("alice", "d1", token: 2)
        try await f.store.registerActivity("m", "alice", "d1", token: 3)
        // Removing what is not there changes nothing either.
        try await f.store.removePushToStartToken(userId: "alice", deviceId: "d2")
        try await f.store.removeActivityToken(activityId: "other", userId: "alice", deviceId: "d1")
        _ = try await f.store.registerDevice(DeviceRegistration(userId: "alice", deviceId: "d3", pushToken: .remove))
        // The same token in uppercase is the same token.
        _ = try await f.store.registerDevice(DeviceRegistration(userId: "alice", deviceId: "d1",
                                                                pushToken: .set(apnsToken(1).uppercased())))
        _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
            activityId: "m", userId: "alice", deviceId: "d1", token: apnsToken(3).uppercased()))
        #expect(try await f.store.history(userId: "alice", limit: 100).count == 3)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.lastSeenAt == f.clock.now(),
                "the re-registration did happen")
    }

    // MARK: Reasons

    @Test func signOutRemovesEveryTokenOfTheDeviceWithReasonSignOut() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.registerPushToStart("alice", "d1", token: 2)
        try await f.store.registerActivity("m", "alice", "d1", token: 3)
        try await f.store.register("alice", "d2", token: 4)
        try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: nil)
        let removed = try await f.store.historyShapes("alice", limit: 3)
        #expect(Set(removed) == [
            EventShape("d1", .push, .removed, reason: .signOut),
            EventShape("d1", .pushToStart, .removed, reason: .signOut),
            EventShape("d1", .activity, activityId: "m", .removed, reason: .signOut),
        ])
        #expect(try await f.store.history(userId: "alice", limit: 100).count == 7)
    }

    @Test func pushTokenNullIsPermissionWithdrawn() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        _ = try await f.store.registerDevice(DeviceRegistration(userId: "alice", deviceId: "d1", pushToken: .remove))
        let newest = try #require(try await f.store.history(userId: "alice", limit: 1).first)
        #expect(EventShape(newest, withFingerprint: true)
                == EventShape("d1", .push, .removed, reason: .permissionWithdrawn, fingerprint: KnownFingerprint.apns1))
    }

    @Test func theTokenDeleteRoutesAreDeleted() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.registerPushToStart("alice", "d1", token: 1)
        try await f.store.registerActivity("m", "alice", "d1", token: 2)
        try await f.store.removePushToStartToken(userId: "alice", deviceId: "d1")
        try await f.store.removeActivityToken(activityId: "m", userId: "alice", deviceId: "d1")
        #expect(try await f.store.historyShapes("alice", limit: 2) == [
            EventShape("d1", .activity, activityId: "m", .removed, reason: .deleted),
            EventShape("d1", .pushToStart, .removed, reason: .deleted),
        ])
    }

    @Test func feedbackNamesTheAPNsReason() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.registerActivity("m", "alice", "d2", token: 2)
        #expect(try await f.store.removeToken(apnsToken(1), reason: .badDeviceToken, registeredBefore: nil) == 1)
        #expect(try await f.store.removeToken(apnsToken(2).uppercased(), reason: .unregistered, registeredBefore: nil) == 1)
        let events = try await f.store.history(userId: "alice", limit: 2)
        #expect(events.map { EventShape($0, withFingerprint: true) } == [
            EventShape("d2", .activity, activityId: "m", .removed, reason: .feedback, feedbackReason: .unregistered,
                       fingerprint: KnownFingerprint.apns2),
            EventShape("d1", .push, .removed, reason: .feedback, feedbackReason: .badDeviceToken,
                       fingerprint: KnownFingerprint.apns1),
        ])
    }

    @Test func aTokenTheSameUserRegistersOnAnotherDeviceIsMovedToDevice() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.registerActivity("m", "alice", "d1", token: 2)
        try await f.store.register("alice", "d2", token: 1)
        // The push token takes the whole record: its activity token goes with it, for the same reason.
        #expect(try await f.store.historyShapes("alice", limit: 3) == [
            EventShape("d2", .push, .registered),
            EventShape("d1", .activity, activityId: "m", .removed, reason: .movedToDevice),
            EventShape("d1", .push, .removed, reason: .movedToDevice),
        ])
        #expect(try await f.store.deviceIds("alice") == ["d2"])
    }

    @Test func aPushToStartTokenTheSameUserRegistersOnAnotherDeviceIsMovedToDevice() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.registerPushToStart("alice", "d1", token: 1)
        try await f.store.registerPushToStart("alice", "d2", token: 1)
        #expect(try await f.store.historyShapes("alice", limit: 2) == [
            EventShape("d2", .pushToStart, .registered),
            EventShape("d1", .pushToStart, .removed, reason: .movedToDevice),
        ])
    }

    @Test func anActivityTokenTheSameUserRegistersOnAnotherDeviceIsMovedToDevice() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.registerActivity("m", "alice", "d1", token: 2)
        try await f.store.registerActivity("m", "alice", "d2", token: 2)
        #expect(try await f.store.historyShapes("alice", limit: 2) == [
            EventShape("d2", .activity, activityId: "m", .registered),
            EventShape("d1", .activity, activityId: "m", .removed, reason: .movedToDevice),
        ])
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.activityCount == 0)
    }

    @Test func aTokenAnotherUserRegistersIsMovedToUserWithoutNamingThem() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.registerActivity("m", "alice", "d2", token: 2)
        try await f.store.register("bob-the-new-holder", "bobs-phone", token: 1)
        try await f.store.registerActivity("m", "bob-the-new-holder", "bobs-phone", token: 2)
        let alice = try await f.store.history(userId: "alice", limit: 100)
        #expect(alice.prefix(2).map { EventShape($0) } == [
            EventShape("d2", .activity, activityId: "m", .removed, reason: .movedToUser),
            EventShape("d1", .push, .removed, reason: .movedToUser),
        ])
        for event in alice {
            #expect(event.userId == "alice")
            #expect(!event.deviceId.contains("bob"))
            #expect(!event.appId.contains("bob") && !(event.activityId ?? "").contains("bob"))
        }
        #expect(try await f.store.historyShapes("bob-the-new-holder") == [
            EventShape("bobs-phone", .activity, activityId: "m", .registered),
            EventShape("bobs-phone", .push, .registered),
        ])
    }

    @Test func canonicallyEquivalentUserIdsAreTwoUsers() async throws {
        let f = try makeStore(); defer { f.close() }
        let nfc = "Jos\u{E9}", nfd = "Jose\u{301}"
        #expect(nfc == nfd, "Swift calls them equal; the store must not")
        try await f.store.register(nfc, "d1", token: 1)
        try await f.store.register(nfd, "d1", token: 1)
        #expect(try await f.store.historyShapes(nfc) == [
            EventShape("d1", .push, .removed, reason: .movedToUser),
            EventShape("d1", .push, .registered),
        ])
        #expect(try await f.store.historyShapes(nfd) == [EventShape("d1", .push, .registered)])
        #expect(try await f.store.history(userId: nfd, limit: 100).allSatisfy { $0.userId.utf8.elementsEqual(nfd.utf8) })
    }

    @Test func theDeviceCapEvictsWithReasonDeviceCap() async throws {
        let f = try makeStore(maxDevicesPerUser: 2); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.registerPushToStart("alice", "d1", token: 4)
        f.clock.advance(seconds: 1)
        try await f.store.register("alice", "d2", token: 2)
        f.clock.advance(seconds: 1)
        try await f.store.register("alice", "d3", token: 3)
        #expect(try await f.store.deviceIds("alice") == ["d3", "d2"])
        #expect(try await Set(f.store.historyShapes("alice", limit: 3).dropFirst()) == [
            EventShape("d1", .push, .removed, reason: .deviceCap),
            EventShape("d1", .pushToStart, .removed, reason: .deviceCap),
        ])
        #expect(try await f.store.historyShapes("alice", limit: 1) == [EventShape("d3", .push, .registered)])
    }

    @Test func theActivityCapEvictsWithReasonActivityCap() async throws {
        let f = try makeStore { $0.limits.maxActivitiesPerDevice = 2 }; defer { f.close() }
        try await f.store.registerActivity("a1", "alice", "d1", token: 1)
        f.clock.advance(seconds: 1)
        try await f.store.registerActivity("a2", "alice", "d1", token: 2)
        f.clock.advance(seconds: 1)
        try await f.store.registerActivity("a3", "alice", "d1", token: 3)
        #expect(try await f.store.historyShapes("alice", limit: 2) == [
            EventShape("d1", .activity, activityId: "a3", .registered),
            EventShape("d1", .activity, activityId: "a1", .removed, reason: .activityCap),
        ])
    }

    @Test func theSweepRemovesWithReasonExpired() async throws {
        let f = try makeStore { c in
            c.limits.deviceTTL = .seconds(10 * Self.hour)
            c.limits.activityTTL = .seconds(2 * Self.hour)
        }
        defer { f.close() }
        try await f.store.register("alice", "old", token: 1)
        try await f.store.registerActivity("m", "alice", "kept", token: 2)
        f.clock.advance(seconds: 9 * Self.hour)
        try await f.store.register("alice", "kept")
        f.clock.advance(seconds: Self.hour + 1)
        #expect(try await f.store.sweep(dryRun: false) == SweepCounts(devices: 1, activityTokens: 1))
        let events = try await f.store.history(userId: "alice", limit: 2)
        #expect(Set(events.map { EventShape($0) }) == [
            EventShape("old", .push, .removed, reason: .expired),
            EventShape("kept", .activity, activityId: "m", .removed, reason: .expired),
        ])
        #expect(events.allSatisfy { $0.at == f.clock.now() })
    }

    // MARK: Reading

    @Test func newestFirstAndLimit() async throws {
        let f = try makeStore(); defer { f.close() }
        for n in 1...5 {
            try await f.store.register("alice", "d\(n)", token: n)
            f.clock.advance(seconds: 1)
        }
        let all = try await f.store.history(userId: "alice", limit: 100)
        #expect(all.map(\.deviceId) == ["d5", "d4", "d3", "d2", "d1"])
        #expect(try await f.store.history(userId: "alice", limit: 2) == Array(all.prefix(2)))
        #expect(try await f.store.history(userId: "alice", limit: 1) == Array(all.prefix(1)))
    }

    @Test func eventsOfOneMillisecondKeepTheirOrder() async throws {
        let f = try makeStore(); defer { f.close() }
        for n in 1...5 { try await f.store.register("alice", "d1", token: n) }
        let events = try await f.store.history(userId: "alice", limit: 100)
        #expect(events.map(\.action) == [.rotated, .rotated, .rotated, .rotated, .registered])
        #expect(events.first?.tokenFingerprint == HistoryEvent.fingerprint(of: apnsToken(5)))
    }

    @Test func aClockThatStepsBackKeepsNewestFirst() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        let first = f.clock.now()
        f.clock.advance(seconds: -30)
        try await f.store.register("alice", "d1", token: 2)
        let events = try await f.store.history(userId: "alice", limit: 100)
        #expect(events.map(\.action) == [.rotated, .registered])
        #expect(events.allSatisfy { $0.at == first }, "an event is never dated before the one it follows")
    }

    @Test func aUserKeepsAtMostOneHundredEventsAndTheOldestGo() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("bob", "d", token: 10_000)
        for n in 0..<105 {
            try await f.store.register("alice", "d1", token: n)
            f.clock.advance(milliseconds: 10)
        }
        let events = try await f.store.history(userId: "alice", limit: 100)
        #expect(events.count == 100)
        #expect(events.first?.tokenFingerprint == HistoryEvent.fingerprint(of: apnsToken(104)))
        #expect(events.last?.tokenFingerprint == HistoryEvent.fingerprint(of: apnsToken(5)))
        #expect(events.allSatisfy { $0.action == .rotated })
        #expect(try await f.store.history(userId: "alice", limit: 1_000).count == 100)
        #expect(try await f.store.history(userId: "bob", limit: 100).count == 1, "another user's history is not trimmed")
        #expect(try await f.store.stats().historyEvents == 101)
        #expect(try await f.check() == [], "the dropped events' expiry entries went with them")
    }

    @Test func concurrentChangesOfOneUserKeepTheBoundAndTheOrder() async throws {
        let f = try makeStore(); defer { f.close() }
        let store = f.store
        let clock = f.clock
        // Three waves of 50 at once: a node holds at most `maxPendingWritesPerUser` of one user's writes.
        for wave in 0..<3 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in wave * 50..<(wave + 1) * 50 {
                    group.addTask {
                        clock.advance(milliseconds: 1)
                        try await store.register("alice", "d\(n % 10)", token: n)
                    }
                }
                try await group.waitForAll()
            }
        }
        let events = try await f.store.history(userId: "alice", limit: 100)
        #expect(events.count == 100)
        #expect(try await f.store.stats().historyEvents == 100)
        #expect(zip(events, events.dropFirst()).allSatisfy { !($0.at < $1.at) }, "newest first")
        #expect(try await f.check() == [])
    }

    @Test func eventsOlderThanTheDeviceTTLAreSwept() async throws {
        let f = try makeStore { $0.limits.deviceTTL = .seconds(10 * Self.hour) }; defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: nil)
        f.clock.advance(seconds: 5 * Self.hour)
        try await f.store.register("alice", "d2", token: 2)
        f.clock.advance(seconds: 5 * Self.hour - 1)
        _ = try await f.store.sweep(dryRun: false)
        #expect(try await f.store.history(userId: "alice", limit: 100).count == 3, "a second short of the TTL")
        f.clock.advance(seconds: 2)
        #expect(try await f.store.sweep(dryRun: false) == SweepCounts())
        #expect(try await f.store.historyShapes("alice") == [EventShape("d2", .push, .registered)])
        #expect(try await f.store.stats().historyEvents == 1)
        #expect(try await f.check() == [])
    }

    @Test func theFingerprintIsTheStartOfSHA256OfTheTokenAsTheSenderViewCarriesIt() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        _ = try await f.store.registerDevice(DeviceRegistration(userId: "alice", deviceId: "d2",
                                                                pushToken: .set(apnsToken(0xabc).uppercased())))
        _ = try await f.store.registerDevice(DeviceRegistration(userId: "alice", deviceId: "d3",
                                                                pushToken: .set("Fcm:Token-1"), platform: .fcm))
        let fingerprints = try await f.store.history(userId: "alice", limit: 3).map(\.tokenFingerprint)
        #expect(fingerprints == [KnownFingerprint.fcm1, KnownFingerprint.apnsABC, KnownFingerprint.apns1])
        #expect(HistoryEvent.fingerprint(of: apnsToken(1)) == KnownFingerprint.apns1)
    }

    @Test func eventsCarryTheAppAndTheActivity() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.registerActivity("match-7", "alice", "d1", token: 2, appId: "com.example.scores")
        let events = try await f.store.history(userId: "alice", limit: 100)
        #expect(events.map(\.appId) == ["com.example.scores", "default"])
        #expect(events.map(\.activityId) == ["match-7", nil])
        #expect(events.map(\.kind) == [.activity, .push])
    }

    @Test func anUnknownUserHasNoHistory() async throws {
        let f = try makeStore(); defer { f.close() }
        #expect(try await f.store.history(userId: "nobody", limit: 100) == [])
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.register("alic", "d1", token: 2)
        #expect(try await f.store.history(userId: "nobody", limit: 100) == [])
        #expect(try await f.store.history(userId: "al", limit: 100) == [])
        #expect(try await f.store.history(userId: "alic", limit: 100).map(\.tokenFingerprint) == [KnownFingerprint.apns2],
                "a user whose id is a prefix of another's sees only their own events")
    }
}
