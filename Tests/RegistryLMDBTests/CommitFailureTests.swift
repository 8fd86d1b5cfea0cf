import Foundation
import LMDB
@testable import RegistryCore
@testable import RegistryLMDB
@testable import RegistryPostgres
import RegistryTestSupport
import Testing

/// A failed commit is never acknowledged: a map at its configured maximum
/// is retryable (nothing touched the disk), any disk error stops all
/// writing for good.
struct CommitFailureTests {
    @Test func aFullMapIsStorageFull() {
        #expect(GroupCommitWriter.classify(LMDBError.mapFull) == .storageFull)
    }

    /// LMDB returns the errno of a page write and of the fsync alike, so a
    /// full disk is treated as a failed fsync: nothing after it is trusted.
    @Test func diskErrorsAndPanicsMakeTheStoreUnavailable() {
        for error in [LMDBError.system(errno: EIO), .system(errno: ENOSPC), .system(errno: EDQUOT), .panic, .corrupted] {
            guard case .unavailable = GroupCommitWriter.classify(error) else {
                Issue.record("\(error) should make the store unavailable")
                continue
            }
        }
    }

    @Test func aBatchThatCannotCommitFailsEveryLaterWriteAndMarksTheStoreUnhealthy() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1")
        #expect(f.lmdb.isHealthy)
        f.lmdb.environment.close()
        let first = await registryError { try await f.store.register("alice", "d2") }
        guard case .unavailable? = first else {
            Issue.record("expected unavailable, got \(String(describing: first))")
            return
        }
        #expect(!f.lmdb.isHealthy)
        #expect(await registryError { try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: nil) } == first)
    }
}
