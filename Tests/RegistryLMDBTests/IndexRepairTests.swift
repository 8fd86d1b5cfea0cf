import Foundation
import LMDB
@testable import RegistryCore
@testable import RegistryLMDB
@testable import RegistryPostgres
import RegistryTestSupport
import Testing

/// `repairIndexes` rebuilds every index from the records. Each test breaks
/// one kind of index entry through raw LMDB writes (as a bug, a crash of an
/// older build or a hand edit could), shows that `check` sees it and that
/// the API misbehaves because of it where it can without changing the
/// store, repairs, and then shows `check` clean, the report counting exactly
/// that fix, and the API (lookups, fan-out, feedback by token value, sweep)
/// working again.
struct IndexRepairTests {
    /// alice/d1: push 1, push-to-start 101, activities m1 (token 201) and m2
    /// (202); alice/d2: push 2; bob/d1: push 3, activity m1 (203); carol/d1:
    /// signed out with a sequence (a tombstone). Ten minutes apart, in this order.
    private func populate(_ f: StoreFixture) async throws {
        let s = f.store
        let step = { f.clock.advance(seconds: 600) }
        try await s.register("alice", "d1", token: 1); step()
        _ = try await s.registerPushToStartToken(PushToStartRegistration(userId: "alice", deviceId: "d1", token: apnsToken(101))); step()
        _ = try await s.registerActivityToken(ActivityTokenRegistration(activityId: "m1", userId: "alice", deviceId: "d1", token: apnsToken(201))); step()
        _ = try await s.registerActivityToken(ActivityTokenRegistration(activityId: "m2", userId: "alice", deviceId: "d1", token: apnsToken(202))); step()
        try await s.register("alice", "d2", token: 2); step()
        try await s.register("bob", "d1", token: 3); step()
        _ = try await s.registerActivityToken(ActivityTokenRegistration(activityId: "m1", userId: "bob", deviceId: "d1", token: apnsToken(203))); step()
        try await s.signOut(userId: "carol", deviceId: "d1", sequence: 1); step()
        #expect(try await f.check() == [])
    }

    private func pushToken(_ f: StoreFixture, _ user: String, _ device: String) async throws -> String? {
        try await f.store.device(userId: user, deviceId: device)?.pushToken?.token
    }

    private func fanOut(_ f: StoreFixture, _ activity: String) async throws -> [String] {
        try await f.store.allActivityTokens(activity).map { "\($0.userId)/\($0.deviceId)" }.sorted()
    }

    private func feedback(_ f: StoreFixture, _ n: Int) async throws -> Int {
        try await f.store.removeToken(apnsToken(n), reason: .unregistered, registeredBefore: nil)
    }

    // MARK: One kind of breakage each

    /// Without its owner entry a token cannot be found by its value:
    /// feedback removes nothing, and a reinstall would not claim it.
    @Test func missingOwnerEntriesArePutBack() async throws {
        let f = try makeStore(); defer { f.close() }
        try await populate(f)
        try f.corrupt { txn, s in
            _ = try txn.delete(StoreKey.tokenOwner(apnsToken(1), .push), in: s.tokenOwners)
            _ = try txn.delete(StoreKey.tokenOwner(apnsToken(101), .pushToStart), in: s.tokenOwners)
            _ = try txn.delete(StoreKey.tokenOwner(apnsToken(202), .activity), in: s.tokenOwners)
        }
        #expect(Set(try await f.check()) == [
            "push token \"alice\"/\"d1\": no owner entry", "pushToStart token \"alice\"/\"d1\": no owner entry",
            "activity token \"m2\"/\"alice\"/\"d1\": no owner entry",
        ])
        #expect(try await feedback(f, 1) == 0, "feedback cannot find the token")

        let report = try await f.lmdb.rebuildIndexes(batchSize: 3)
        #expect(report.ownerEntriesAdded == 3)
        #expect(report.fixes == 3)
        #expect(report.lines.contains("added owner entry for push token of \"alice\"/\"d1\""))
        #expect(try await f.check() == [])
        #expect(try await feedback(f, 1) == 1)
        #expect(try await feedback(f, 101) == 1)
        #expect(try await feedback(f, 202) == 1)
        #expect(try await pushToken(f, "alice", "d1") == nil)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToStartToken == nil)
        #expect(try await fanOut(f, "m2") == [])
        #expect(try await f.check() == [])
    }

    /// A missing expiry entry means the sweep never removes that record.
    @Test func missingExpiryEntriesArePutBack() async throws {
        let f = try makeStore(); defer { f.close() }
        try await populate(f)
        let deviceAt = try #require(try await f.store.device(userId: "alice", deviceId: "d2")).lastSeenAt
        let tokenAt = try #require(try await f.store.allActivityTokens("m2").first).lastSeenAt
        let tombstoneAt = try f.lmdb.reading { try $0.tombstone(.v1("carol", "d1")) }!.deletedAt
        var deleted: [Bool] = []
        try f.corrupt { txn, s in
            for entry in [ExpiryKey(at: deviceAt, kind: .device, recordKey: StoreKey.device("alice", "d2")),
                          ExpiryKey(at: tokenAt, kind: .activityToken, recordKey: StoreKey.activityToken("m2", "alice", "d1")),
                          ExpiryKey(at: tombstoneAt, kind: .tombstone, recordKey: StoreKey.device("carol", "d1"))] {
                deleted.append(try txn.delete(entry.bytes, in: s.expiry))
            }
        }
        #expect(deleted == [true, true, true])
        #expect(Set(try await f.check()) == [
            "device \"alice\"/\"d2\": no expiry entry", "activity token \"m2\"/\"alice\"/\"d1\": no expiry entry",
            "tombstone \"carol\"/\"d1\": no expiry entry",
        ])
        f.clock.advance(seconds: 91 * 86_400)
        let before = try await f.store.sweep(dryRun: true)
        #expect(before.devices == 2 && before.tombstones == 0, "alice/d2 and carol's tombstone would outlive their TTL")

        let report = try await f.lmdb.rebuildIndexes(batchSize: 2)
        #expect(report.expiryEntriesAdded == 3)
        #expect(report.fixes == 3)
        #expect(report.lines.contains("added expiry entry for device \"alice\"/\"d2\""))
        #expect(try await f.check() == [])
        #expect(try await f.store.sweep(dryRun: false) == SweepCounts(devices: 3, pushToStartTokens: 1, activityTokens: 3, tombstones: 1))
        let left = try f.entries()
        let emptied = left.filter { !["history", "expiry", "tokenOwners", "ownerCleanup"].contains($0.key) }.values
            .allSatisfy { $0.isEmpty }
        #expect(emptied, "everything expired went")
        // The owner entries wait for the owner cleanup, each logged.
        #expect(Set(left["tokenOwners"]?.keys.map { $0 } ?? []) == Set(left["ownerCleanup"]?.values.map { $0 } ?? []))
        // What stays: the sweep's own `expired` events, each with its expiry entry.
        #expect(left["expiry"]?.count == left["history"]?.count)
    }

    /// An expiry entry in the wrong hour bucket, or for a record that is
    /// gone, makes the sweep visit (and a dry run count) a record twice.
    @Test func staleExpiryEntriesAreRemoved() async throws {
        let f = try makeStore(); defer { f.close() }
        try await populate(f)
        let old = Timestamp(milliseconds: 5 * ExpiryKey.bucketMilliseconds)
        try f.corrupt { txn, s in
            try txn.put([], for: ExpiryKey(at: old, kind: .device, recordKey: StoreKey.device("alice", "d1")).bytes, in: s.expiry)
            try txn.put([], for: ExpiryKey(at: old, kind: .activityToken, recordKey: StoreKey.activityToken("m1", "alice", "d1")).bytes,
                        in: s.expiry)
            try txn.put([], for: ExpiryKey(at: old, kind: .device, recordKey: StoreKey.device("ghost", "d")).bytes, in: s.expiry)
        }
        #expect(try await f.check().count == 3)
        f.clock.advance(seconds: 91 * 86_400)
        #expect(try await f.store.sweep(dryRun: true).devices == 4, "alice/d1 counted twice")

        let report = try await f.lmdb.rebuildIndexes(batchSize: 2)
        #expect(report.expiryEntriesRemoved == 3)
        #expect(report.fixes == 3)
        #expect(report.lines.contains("removed expiry entry for device \"ghost\"/\"d\": no record"))
        #expect(report.lines.contains { $0.hasPrefix("removed expiry entry for device \"alice\"/\"d1\": the record is in hour bucket") })
        #expect(try await f.check() == [])
        #expect(try await f.store.sweep(dryRun: true).devices == 3)
    }

    /// A wrong `activityCount` is what reads return, and what the activity cap counts.
    @Test func aWrongActivityCountIsSetFromTheTokens() async throws {
        let f = try makeStore(); defer { f.close() }
        try await populate(f)
        try f.corrupt { txn, s in
            let key = StoreKey.device("alice", "d1")
            var value = try DeviceValue(decoding: txn.get(key, in: s.devices)!)
            value.activityCount = 7
            try txn.put(value.encoded(), for: key, in: s.devices)
        }
        #expect(try await f.check() == ["device \"alice\"/\"d1\": activityCount 7 but 2 activity tokens"])
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.activityCount == 7)

        let report = try await f.lmdb.rebuildIndexes()
        #expect(report.activityCountsFixed == 1)
        #expect(report.fixes == 1)
        #expect(report.lines == ["set activityCount of device \"alice\"/\"d1\" to 2 (it said 7)"])
        #expect(try await f.check() == [])
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.activityCount == 2)
    }

    /// A missing device-activity entry hides the token from its device (a
    /// sign-out would leave it behind); a stray one names a token that is not there.
    @Test func deviceActivityEntriesAreRebuilt() async throws {
        let f = try makeStore(); defer { f.close() }
        try await populate(f)
        try f.corrupt { txn, s in
            _ = try txn.delete(StoreKey.deviceActivity("alice", "d1", "m2"), in: s.deviceActivities)
            try txn.put([], for: StoreKey.deviceActivity("bob", "d1", "m9"), in: s.deviceActivities)
        }
        #expect(Set(try await f.check()) == [
            "device \"alice\"/\"d1\": activityCount 2 but 1 activity tokens",
            "activity token \"m2\"/\"alice\"/\"d1\": no device-activity entry",
            "device \"bob\"/\"d1\": activityCount 1 but 2 activity tokens",
            "device-activity \"bob\"/\"d1\"/\"m9\": no activity token",
        ])

        let report = try await f.lmdb.rebuildIndexes(batchSize: 1)
        #expect(report.deviceActivityEntriesAdded == 1)
        #expect(report.deviceActivityEntriesRemoved == 1)
        #expect(report.fixes == 2, "both counts were right all along")
        #expect(try await f.check() == [])
        try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: nil)
        #expect(try await fanOut(f, "m2") == [], "the sign-out found the token through its entry")
        #expect(try await fanOut(f, "m1") == ["bob/d1"])
        #expect(try await f.check() == [])
    }

    /// Tokens whose device record is gone are still fanned out to and still
    /// block their token value; the repair removes them.
    @Test func tokensOfAMissingDeviceAreRemoved() async throws {
        let f = try makeStore(); defer { f.close() }
        try await populate(f)
        try f.corrupt { txn, s in _ = try txn.delete(StoreKey.device("bob", "d1"), in: s.devices) }
        #expect(Set(try await f.check()) == [
            "push token \"bob\"/\"d1\": no device", "activity token \"m1\"/\"bob\"/\"d1\": no device",
            "expiry entry device \"bob\"/\"d1\": no record",
        ])
        #expect(try await fanOut(f, "m1") == ["alice/d1", "bob/d1"])

        let report = try await f.lmdb.rebuildIndexes(batchSize: 2)
        #expect(report.orphanTokensRemoved == 2)
        #expect(report.expiryEntriesRemoved == 1)
        #expect(report.fixes == 3)
        #expect(report.lines.contains("removed activity token \"m1\"/\"bob\"/\"d1\": its device is gone"))
        #expect(report.lines.contains("removed push token of \"bob\"/\"d1\": its device is gone"))
        #expect(try await f.check() == [])
        #expect(try await fanOut(f, "m1") == ["alice/d1"])
        #expect(try await feedback(f, 3) == 0)
        #expect(try await feedback(f, 203) == 0)
        #expect(try f.entries()["tokenOwners"]?.count == 5, "tokens 1, 2, 101, 201 and 202; 3's and 203's went")
    }

    /// An owner entry naming a record that does not hold its token: feedback
    /// by that token finds nothing, and the real holder keeps it.
    @Test func anOwnerEntryNamingTheWrongHolderIsRepointed() async throws {
        let f = try makeStore(); defer { f.close() }
        try await populate(f)
        try f.corrupt { txn, s in
            try txn.put(TokenHolder(userId: "alice", deviceId: "d2", activityId: nil).encoded(),
                        for: StoreKey.tokenOwner(apnsToken(1), .push), in: s.tokenOwners)
            try txn.put(TokenHolder(userId: "alice", deviceId: "d1", activityId: "m1").encoded(),
                        for: StoreKey.tokenOwner(apnsToken(203), .activity), in: s.tokenOwners)
        }
        #expect(Set(try await f.check()) == [
            "push token \"alice\"/\"d1\": no owner entry", "activity token \"m1\"/\"bob\"/\"d1\": no owner entry",
            "token owner entry for \"alice\"/\"d2\": holder does not hold it",
            "token owner entry for \"m1\"/\"alice\"/\"d1\": holder does not hold it",
        ])
        #expect(try await feedback(f, 203) == 0)

        let report = try await f.lmdb.rebuildIndexes(batchSize: 3)
        #expect(report.ownerEntriesRepointed == 2)
        #expect(report.fixes == 2)
        #expect(report.lines.contains(
            "repointed the owner entry for push token of \"alice\"/\"d1\": it named \"alice\"/\"d2\", which does not hold it"))
        #expect(try await f.check() == [])
        #expect(try await feedback(f, 1) == 1)
        #expect(try await pushToken(f, "alice", "d1") == nil)
        #expect(try await pushToken(f, "alice", "d2") == apnsToken(2))
        #expect(try await feedback(f, 203) == 1)
        #expect(try await fanOut(f, "m1") == ["alice/d1"])
        #expect(try await f.check() == [])
    }

    /// Two records holding one token break the one-owner rule: feedback
    /// for it removes it from one holder only. The holder updated later keeps
    /// it; the other loses that token (its device stays).
    @Test func aTokenHeldByTwoRecordsStaysWithTheLaterHolder() async throws {
        let f = try makeStore(); defer { f.close() }
        try await populate(f)
        _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
            activityId: "m5", userId: "alice", deviceId: "d2", token: apnsToken(204)))
        try f.corrupt { txn, s in
            for (key, kind, token) in [(StoreKey.device("alice", "d2"), TokenKind.push, 1),
                                       (StoreKey.activityToken("m5", "alice", "d2"), .activity, 203)] {
                var value = try TokenValue(decoding: txn.get(key, in: s.database(kind))!, kind, key: key)
                value.token = apnsToken(token)
                try txn.put(value.encoded(kind, key: key), for: key, in: s.database(kind))
            }
        }
        #expect(Set(try await f.check()) == [
            "push token \"alice\"/\"d2\": the same token is also held by \"alice\"/\"d1\"",
            "activity token \"m5\"/\"alice\"/\"d2\": the same token is also held by \"m1\"/\"bob\"/\"d1\"",
            "token owner entry for \"alice\"/\"d2\": holder does not hold it",
            "token owner entry for \"m5\"/\"alice\"/\"d2\": holder does not hold it",
        ])

        let report = try await f.lmdb.rebuildIndexes(batchSize: 2)
        #expect(report.duplicateTokensRemoved == 2)
        #expect(report.ownerEntriesRemoved == 2, "the rewritten records' old tokens 2 and 204")
        #expect(report.fixes == 4)
        #expect(report.lines.contains("push token held by both \"alice\"/\"d2\" and \"alice\"/\"d1\": "
                                      + "kept on \"alice\"/\"d2\" (updated later), removed from \"alice\"/\"d1\""))
        #expect(try await f.check() == [])
        #expect(try await f.store.device(userId: "alice", deviceId: "d1") != nil)
        #expect(try await pushToken(f, "alice", "d1") == nil)
        #expect(try await pushToken(f, "alice", "d2") == apnsToken(1))
        #expect(try await fanOut(f, "m1") == ["alice/d1"])
        #expect(try await f.store.device(userId: "bob", deviceId: "d1")?.activityCount == 0)
        #expect(try await feedback(f, 1) == 1)
        #expect(try await pushToken(f, "alice", "d2") == nil)
        #expect(try await feedback(f, 203) == 1)
        #expect(try await fanOut(f, "m5") == [])
        #expect(try await f.check() == [])
    }

    /// When both holders were updated at the same instant, the one the owner
    /// entry already names keeps the token, so lookups do not change.
    @Test func onATieTheNamedHolderKeepsTheToken() async throws {
        let f = try makeStore(); defer { f.close() }
        try await populate(f)
        try f.corrupt { txn, s in
            let held = try TokenValue(decoding: txn.get(StoreKey.device("alice", "d1"), in: s.pushTokens)!,
                                      key: StoreKey.device("alice", "d1"))
            try txn.put(held.encoded(key: StoreKey.device("alice", "d2")), for: StoreKey.device("alice", "d2"), in: s.pushTokens)
        }
        let report = try await f.lmdb.rebuildIndexes()
        #expect(report.duplicateTokensRemoved == 1)
        #expect(try await pushToken(f, "alice", "d1") == apnsToken(1))
        #expect(try await pushToken(f, "alice", "d2") == nil)
        #expect(try await f.check() == [])
    }

    // MARK: What the repair leaves alone

    /// On a consistent store the repair finds nothing, writes nothing (the
    /// data file is byte for byte the same) and reports every entry it visited.
    @Test func aConsistentStoreIsLeftExactlyAsItWas() async throws {
        let f = try makeStore(); defer { f.close() }
        try await populate(f)
        let entries = try f.entries()
        let file = f.configuration.directory + "/data.mdb"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        var progress: [Int] = []
        let report = try await f.lmdb.rebuildIndexes(batchSize: 2, progress: { progress.append($0) })
        #expect(report == RepairReport())
        #expect(report.summary == "repair: nothing to fix")
        #expect(try f.entries() == entries)
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == bytes)
        #expect(progress == progress.sorted() && Set(progress).count == progress.count)
        #expect(progress.last == entries.values.map(\.count).reduce(0, +))
    }

    /// A record that cannot be read cannot be rebuilt from: it is counted,
    /// left as it is (check still reports it), and the repair goes on.
    @Test func anUnreadableRecordIsReportedAndLeftAlone() async throws {
        let f = try makeStore(); defer { f.close() }
        try await populate(f)
        try f.corrupt { txn, s in
            try txn.put([1, 0, 7], for: StoreKey.device("alice", "d1"), in: s.devices)
            _ = try txn.delete(StoreKey.tokenOwner(apnsToken(3), .push), in: s.tokenOwners)
        }
        let report = try await f.lmdb.rebuildIndexes()
        #expect(report.unreadableRecords == 1)
        #expect(report.ownerEntriesAdded == 1)
        #expect(report.fixes == 1)
        #expect(report.lines.contains("left unreadable device \"alice\"/\"d1\" alone"))
        #expect(report.summary == "repair: 1 fix(es): owner entries added 1; 1 unreadable record(s) left alone")
        #expect(Set(try await f.check()) == ["device \"alice\"/\"d1\": unreadable value",
                                             "expiry entry device \"alice\"/\"d1\": no record"],
                "its expiry entry stays: the repair cannot tell which bucket is right")
    }

    /// The report keeps `lineLimit` lines and counts the rest. (Keys are
    /// length-prefixed parts, so "bob" sorts before "alice".)
    @Test func theReportKeepsBoundedLines() async throws {
        let f = try makeStore(); defer { f.close() }
        try await populate(f)
        try f.corrupt { txn, s in
            for n in [1, 2, 3] { _ = try txn.delete(StoreKey.tokenOwner(apnsToken(n), .push), in: s.tokenOwners) }
        }
        let report = try await f.lmdb.rebuildIndexes(batchSize: 1, lineLimit: 1)
        #expect(report.ownerEntriesAdded == 3)
        #expect(report.lines == ["added owner entry for push token of \"bob\"/\"d1\""])
        #expect(report.linesLeftOut == 2)
    }

    // MARK: Beside a running writer

    /// Writes acknowledged while the repair runs (in small steps, so they
    /// interleave) are all there afterwards, and the store is consistent.
    /// Each write touches its own device, so what "there" means is exact.
    @Test func writesDuringTheRepairAllSurviveIt() async throws {
        let f = try makeStore(maxDevicesPerUser: 100); defer { f.close() }
        let store = f.store
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<200 {
                group.addTask {
                    try await store.register("u\(i / 20)", "d\(i % 20)", token: i)
                    _ = try await store.registerActivityToken(ActivityTokenRegistration(
                        activityId: "m\(i % 7)", userId: "u\(i / 20)", deviceId: "d\(i % 20)", token: apnsToken(1_000 + i)))
                }
            }
            try await group.waitForAll()
        }
        // Broken before the repair: devices 100..<120 lose their push token's owner entry.
        try f.corrupt { txn, s in
            for i in 100..<120 { _ = try txn.delete(StoreKey.tokenOwner(apnsToken(i), .push), in: s.tokenOwners) }
        }
        let lmdb = f.lmdb, clock = f.clock
        let writesDone = Recorder<Int>()
        let seenMidway = Recorder<Int>()
        async let repaired = lmdb.rebuildIndexes(batchSize: 4, progress: { _ in
            let done = writesDone.all.count
            if done > 0 && done < 200 { seenMidway.record(done) }
        })
        let acknowledged = try await withThrowingTaskGroup(of: [(String, String, Int, Int?)].self) { group in
            for i in 0..<100 {
                group.addTask {   // a rotation of an existing device's push token
                    clock.advance(milliseconds: 7)
                    try await store.register("u\(i / 20)", "d\(i % 20)", token: 5_000 + i)
                    writesDone.record(i)
                    return [("u\(i / 20)", "d\(i % 20)", 5_000 + i, nil)]
                }
                group.addTask {   // a new device with an activity token
                    try await store.register("new\(i % 5)", "d\(i)", token: 10_000 + i)
                    _ = try await store.registerActivityToken(ActivityTokenRegistration(
                        activityId: "live", userId: "new\(i % 5)", deviceId: "d\(i)", token: apnsToken(20_000 + i)))
                    writesDone.record(i)
                    return [("new\(i % 5)", "d\(i)", 10_000 + i, 20_000 + i)]
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        let report = try await repaired
        #expect(acknowledged.count == 200)
        #expect(!seenMidway.all.isEmpty, "the repair's steps and the writes interleaved")
        #expect(report.ownerEntriesAdded == 20)
        #expect(report.fixes == 20, "\(report.lines)")
        #expect(try await f.check() == [])
        let live = Set(try await store.allActivityTokens("live").map { "\($0.userId)/\($0.deviceId)/\($0.token)" })
        for (user, device, token, activityToken) in acknowledged {
            #expect(try await store.device(userId: user, deviceId: device)?.pushToken?.token == apnsToken(token))
            if let activityToken { #expect(live.contains("\(user)/\(device)/\(apnsToken(activityToken))")) }
        }
        for i in 100..<120 {   // the repaired owner entries work
            #expect(try await store.removeToken(apnsToken(i), reason: .unregistered, registeredBefore: nil) == 1)
        }
        #expect(try await f.check() == [])
    }
}
