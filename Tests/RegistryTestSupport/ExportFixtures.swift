import RegistryCore
import Testing

/// Every record `export` yields, in order.
package func exportedRecords(_ f: StoreFixture) async throws -> [ExportedRecord] {
    var records: [ExportedRecord] = []
    try await f.maintenance.export { records.append($0) }
    return records
}

/// What `stats()` counts (not the bytes used, which copy-on-write moves).
package func recordCounts(_ f: StoreFixture) async throws -> [Int] {
    let s = try await f.store.stats()
    return [s.devices, s.pushTokens, s.pushToStartTokens, s.activityTokens, s.tombstones, s.historyEvents]
}

/// A store with two apps' records (`default` and com.example.a), a
/// tombstone per app and a history of every kind.
package func makeExportSource() async throws -> StoreFixture {
    let appA = "com.example.a"
    let f = try makeStore()
    try await f.store.register("alice", "phone", token: 1)
    f.clock.advance(seconds: 1)
    try await f.store.register("alice", app: appA, "phone", token: 2)
    try await f.store.registerPushToStart("alice", "phone", token: 3, appId: appA, environment: .sandbox)
    try await f.store.registerActivity("m", "alice", "phone", token: 4, appId: appA)
    f.clock.advance(seconds: 1)
    try await f.store.register("alice", app: appA, "phone", token: 5)
    try await f.store.register("bob", app: appA, "tablet", token: 6)
    _ = try await f.store.removeToken(apnsToken(6), reason: .deviceTokenNotForTopic, registeredBefore: nil)
    #expect(try await f.store.correctEnvironment(token: apnsToken(4), environment: .sandbox) == 1)
    try await f.store.signOut(userId: "bob", appId: appA, deviceId: "old", sequence: 9)
    try await f.store.signOut(userId: "bob", deviceId: "old", sequence: 3)
    return f
}
