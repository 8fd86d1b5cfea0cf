import RegistryCore
import RegistryTestSupport
import Testing

/// `export` / `importRecords` with the v1.1 additions: history events and
/// app families survive a round trip; importing twice changes nothing.
struct ExportImportTests {
    private let appA = "com.example.a"

    @Test func historyAndAppsSurviveARoundTrip() async throws {
        let source = try await makeExportSource(); defer { source.close() }
        let records = try await exportedRecords(source)
        #expect(records.contains { if case .history = $0 { true } else { false } })
        let target = try makeStore(); defer { target.close() }
        // The target already knows another app, so the app codes differ from the source's.
        try await target.store.register("zed", app: "com.example.z", "d", token: 99)
        _ = try await target.maintenance.importRecords(records)

        for user in ["alice", "bob"] {
            #expect(try await target.store.history(userId: user, limit: 100) == source.store.history(userId: user, limit: 100))
            #expect(try await target.store.devices(userId: user, appId: nil) == source.store.devices(userId: user, appId: nil))
        }
        #expect(try await target.store.history(userId: "alice", limit: 100).count == 6)
        #expect(try await Set(target.store.history(userId: "alice", limit: 100).map(\.appId)) == ["default", appA])
        #expect(try await target.store.device(userId: "alice", appId: appA, deviceId: "phone")?.pushToStartToken?.environment == .sandbox)
        #expect(try await target.store.activityTokens(activityId: "m", appId: appA, limit: 10, cursor: nil).tokens
                == source.store.activityTokens(activityId: "m", appId: appA, limit: 10, cursor: nil).tokens)
        #expect(try await target.store.allActivityTokens("m").map(\.environment) == [.sandbox])
        // Tombstones keep their app.
        #expect(await registryError { try await target.store.register("bob", app: appA, "old", sequence: 5) } == .staleWrite)
        #expect(try await target.store.register("bob", "old", sequence: 5).created)
        #expect(try await target.check() == [])
    }

    @Test func anImportWritesNoHistoryOfItsOwn() async throws {
        let target = try makeStore(); defer { target.close() }
        try await target.store.register("alice", "phone", token: 1)
        let record = try #require(try await target.store.device(userId: "alice", deviceId: "phone"))
        // A record that takes alice's token from her and replaces another.
        var other = record
        other.userId = "carol"
        _ = try await target.maintenance.importRecords([.device(other, activityTokens: [])])
        #expect(try await target.store.history(userId: "carol", limit: 100) == [])
        #expect(try await target.store.history(userId: "alice", limit: 100).count == 1)
    }

    @Test func identicalEventsOfOneMillisecondBothSurviveARoundTrip() async throws {
        let source = try makeStore(); defer { source.close() }
        // The same token registered, removed and registered again in one millisecond: two identical events.
        try await source.store.registerActivity("m", "alice", "phone", token: 1)
        try await source.store.removeActivityToken(activityId: "m", userId: "alice", deviceId: "phone")
        try await source.store.registerActivity("m", "alice", "phone", token: 1)
        let history = try await source.store.history(userId: "alice", limit: 100)
        #expect(history.count == 3 && history[0] == history[2])
        let records = try await exportedRecords(source)
        let target = try makeStore(); defer { target.close() }
        _ = try await target.maintenance.importRecords(records)
        #expect(try await target.store.history(userId: "alice", limit: 100) == history)
        _ = try await target.maintenance.importRecords(records)
        #expect(try await target.store.history(userId: "alice", limit: 100) == history)
        // Also when the twins land in two of the import's transactions (500 records each).
        let events = records.filter { if case .history = $0 { true } else { false } }
        #expect(events.count == 3)
        let filler = (0..<498).map { i in
            ExportedRecord.tombstone(Tombstone(userId: "filler", deviceId: "d\(i)", sequence: 1, deletedAt: target.clock.now()))
        }
        let split = try makeStore(); defer { split.close() }
        _ = try await split.maintenance.importRecords(filler + events)
        #expect(try await split.store.history(userId: "alice", limit: 100) == history)
    }
}
