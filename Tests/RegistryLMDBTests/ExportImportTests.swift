import Foundation
import LMDB
@testable import RegistryCore
@testable import RegistryLMDB
import RegistryTestSupport
import Testing
import TokenSealing

/// Import on LMDB, byte for byte.
struct ExportImportTests {
    @Test func importingTwiceChangesNothing() async throws {
        let source = try await makeExportSource(); defer { source.close() }
        let records = try await exportedRecords(source)
        let target = try makeStore(); defer { target.close() }
        _ = try await target.maintenance.importRecords(records)
        let once = try target.entries()
        let statsOnce = try await recordCounts(target)
        _ = try await target.maintenance.importRecords(records)
        #expect(try await recordCounts(target) == statsOnce)
        let twice = try target.entries()
        #expect(twice["history"] == once["history"], "no history event written twice")
        #expect(twice["expiry"] == once["expiry"])
        #expect(twice["devices"] == once["devices"] && twice["tombstones"] == once["tombstones"])
        #expect(try await target.store.history(userId: "alice", limit: 100) == source.store.history(userId: "alice", limit: 100))
        // Importing into the very store it came from changes nothing either.
        let before = try await recordCounts(source)
        _ = try await source.maintenance.importRecords(records)
        #expect(try await recordCounts(source) == before)
        #expect(try await exportedRecords(source) == records)
    }
}
