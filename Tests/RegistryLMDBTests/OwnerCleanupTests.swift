import Foundation
import LMDB
@testable import RegistryCore
@testable import RegistryLMDB
import RegistryTestSupport
import Testing
import TokenSealing

/// The sweep leaves the owner entries of what it deletes, logged, for
/// `OwnerCleanup`'s pass in key order; no reader takes them for an owner.
struct OwnerCleanupTests {
    private static let hour: Int64 = 3_600

    /// alice/old (push 1, push-to-start 2, activity token 3) swept; alice/recent (push 5) stays.
    private func sweptStore() async throws -> StoreFixture {
        let f = try makeExpiringStore(on: .lmdb)
        try await f.store.register("alice", "old", token: 1)
        try await f.store.registerPushToStart("alice", "old", token: 2)
        try await f.store.registerActivity("m", "alice", "old", token: 3)
        f.clock.advance(seconds: 9 * Self.hour)
        try await f.store.register("alice", "recent", token: 5)
        f.clock.advance(seconds: Self.hour + 1)
        #expect(try await f.store.sweep(dryRun: false) == SweepCounts(devices: 1, pushToStartTokens: 1, activityTokens: 1))
        return f
    }

    private static let oldOwnerKeys: Set<[UInt8]> = [StoreKey.tokenOwner(apnsToken(1), .push),
                                                     StoreKey.tokenOwner(apnsToken(2), .pushToStart),
                                                     StoreKey.tokenOwner(apnsToken(3), .activity)]

    @Test func theSweepLeavesOwnerEntriesLoggedAndCheckAcceptsThem() async throws {
        let f = try await sweptStore(); defer { f.close() }
        let entries = try f.entries()
        #expect(Set(entries["tokenOwners"]?.keys.map { $0 } ?? [])
                == Self.oldOwnerKeys.union([StoreKey.tokenOwner(apnsToken(5), .push)]))
        #expect(Set(entries["ownerCleanup"]?.values.map { $0 } ?? []) == Self.oldOwnerKeys)
        #expect(try await f.check() == [])
        let report = try await f.lmdb.rebuildIndexes()
        #expect(report.fixes == 0 && report.staleOwnerEntriesCleared == 3, "\(report)")
        #expect(try f.entries()["tokenOwners"]?.count == 1)
        #expect(try await f.check() == [])
    }

    /// Feedback for a swept token finds no holder; registering it on
    /// another device takes it over, and feedback then removes it there.
    @Test func aLeftOwnerEntryIsNoOwner() async throws {
        let f = try await sweptStore(); defer { f.close() }
        #expect(try await f.store.removeToken(apnsToken(1), reason: .unregistered, registeredBefore: nil) == 0)
        #expect(try await f.store.removeToken(apnsToken(3), reason: .unregistered, registeredBefore: nil) == 0)
        #expect(try await f.store.register("bob", "d1", token: 1).created)
        try await f.store.registerActivity("m", "bob", "d1", token: 3)
        #expect(try await f.store.device(userId: "alice", deviceId: "recent")?.pushToken?.token == apnsToken(5))
        #expect(try await f.check() == [])
        #expect(try await f.store.removeToken(apnsToken(1), reason: .unregistered, registeredBefore: nil) == 1)
        #expect(try await f.store.device(userId: "bob", deviceId: "d1")?.pushToken == nil)
        #expect(try await f.check() == [])
    }

    /// The pass deletes the logged entries whose holder does not hold their
    /// token, keeps the ones registered again since, and empties the log.
    @Test func thePassDeletesOnlyEntriesNoHolderHolds() async throws {
        let f = try await sweptStore(); defer { f.close() }
        try await f.store.register("bob", "d1", token: 1)
        try await f.store.registerPushToStart("alice", "old", token: 2)
        var cleanup = OwnerCleanup(schema: f.lmdb.schema)
        (cleanup.minimumPending, cleanup.density, cleanup.pagesPerStep) = (1, 0, 1)
        try await f.lmdb.cleanOwners(cleanup)
        let entries = try f.entries()
        #expect(entries["ownerCleanup"]?.isEmpty == true)
        #expect(Set(entries["tokenOwners"]?.keys.map { $0 } ?? []) == [StoreKey.tokenOwner(apnsToken(1), .push),
                                                                         StoreKey.tokenOwner(apnsToken(2), .pushToStart),
                                                                         StoreKey.tokenOwner(apnsToken(5), .push)])
        #expect(try await f.check() == [])
        #expect(try await f.store.removeToken(apnsToken(2), reason: .unregistered, registeredBefore: nil) == 1)
    }

    /// A pass stopped between a step and the drop of its log entries (a
    /// crash, a shutdown) leaves nothing `check` calls damage, and the next
    /// pass finishes the work.
    @Test func aPassStoppedHalfWayLeavesNoDamageAndTheNextFinishes() async throws {
        let f = try await sweptStore(); defer { f.close() }
        let cleanup = OwnerCleanup(schema: f.lmdb.schema)
        let (keys, _) = try f.lmdb.reading { read in try cleanup.chunk(read.txn) }
        #expect(try await f.lmdb.writing { writer in try cleanup.clean(keys, from: 0, batchSize: 1, writer) } == 1)
        #expect(try f.entries()["tokenOwners"]?.count == 3)
        #expect(try f.entries()["ownerCleanup"]?.count == 3)
        #expect(try await f.check() == [])
        var due = cleanup
        (due.minimumPending, due.density) = (1, 0)
        try await f.lmdb.cleanOwners(due)
        #expect(try f.entries()["tokenOwners"]?.count == 1)
        #expect(try f.entries()["ownerCleanup"]?.isEmpty == true)
        #expect(try await f.check() == [])
    }

    /// Once the log holds enough keys (256 here, more than twice the owner
    /// index's leaf pages), the sweep ends with the pass.
    @Test func theSweepRunsThePassOnceEnoughEntriesWait() async throws {
        let f = try makeExpiringStore(on: .lmdb); defer { f.close() }
        let store = f.store
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<130 {
                group.addTask {
                    try await store.register("u\(i)", "d", token: i)
                    try await store.registerPushToStart("u\(i)", "d", token: 1_000 + i)
                }
            }
            try await group.waitForAll()
        }
        f.clock.advance(seconds: 11 * Self.hour)
        #expect(try await store.sweep(dryRun: false) == SweepCounts(devices: 130, pushToStartTokens: 130))
        let entries = try f.entries()
        #expect(entries["tokenOwners"]?.isEmpty == true)
        #expect(entries["ownerCleanup"]?.isEmpty == true)
        #expect(try await f.check() == [])
    }
}
