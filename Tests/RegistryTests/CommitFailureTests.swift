import Foundation
import LMDB
@testable import Registry
import Testing

/// A failed commit is never acknowledged: a full disk or map is retryable,
/// anything else stops all writing for good.
struct CommitFailureTests {
    @Test func fullDiskAndFullMapAreStorageFull() {
        #expect(GroupCommitWriter.classify(LMDBError.system(errno: ENOSPC)) == .storageFull)
        #expect(GroupCommitWriter.classify(LMDBError.system(errno: EDQUOT)) == .storageFull)
        #expect(GroupCommitWriter.classify(LMDBError.mapFull) == .storageFull)
    }

    @Test func ioErrorsAndPanicsMakeTheStoreUnavailable() {
        for error in [LMDBError.system(errno: EIO), .panic, .corrupted] {
            guard case .unavailable = GroupCommitWriter.classify(error) else {
                Issue.record("\(error) should make the store unavailable")
                continue
            }
        }
    }

    @Test func aBatchThatCannotCommitFailsEveryLaterWriteAndMarksTheStoreUnhealthy() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1")
        #expect(f.store.isHealthy)
        f.lmdb.environment.close()
        let first = await registryError { try await f.store.register("alice", "d2") }
        guard case .unavailable? = first else {
            Issue.record("expected unavailable, got \(String(describing: first))")
            return
        }
        #expect(!f.store.isHealthy)
        #expect(await registryError { try await f.store.signOut(userId: "alice", deviceId: "d1", sequence: nil) } == first)
    }
}
