import RegistryCore
import RegistryTestSupport
import Testing

/// docs/api.md "Environment correction": `correctEnvironment(token:environment:)`
/// sets a token's environment wherever it is held, with a history event each.
struct EnvironmentCorrectionTests {
    @Test func aPushTokenTakesTheCorrectedEnvironment() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.registerPushToStart("alice", "d1", token: 2)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToken?.environment == .production)
        #expect(try await f.store.correctEnvironment(token: apnsToken(1), environment: .sandbox) == 1)
        let d = try #require(try await f.store.device(userId: "alice", deviceId: "d1"))
        #expect(d.environment == .sandbox && d.pushToken?.environment == .sandbox)
        #expect(d.pushToken?.token == apnsToken(1))
        #expect(d.pushToStartToken?.environment == .production, "another token of the device keeps its environment")
        #expect(try await f.store.devices(userId: "alice").first?.pushToken?.environment == .sandbox)
        // A launch upsert that names no environment keeps the corrected one.
        try await f.store.register("alice", "d1", token: 1)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToken?.environment == .sandbox)
    }

    @Test func aPushToStartTokenTakesTheCorrectedEnvironment() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.registerPushToStart("alice", "d1", token: 2, environment: .sandbox)
        #expect(try await f.store.correctEnvironment(token: apnsToken(2), environment: .production) == 1)
        let d = try #require(try await f.store.device(userId: "alice", deviceId: "d1"))
        #expect(d.pushToStartToken?.environment == .production)
        #expect(d.environment == .production && d.pushToken?.environment == .production)
        #expect(try await f.store.correctEnvironment(token: apnsToken(2), environment: .sandbox) == 1)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToStartToken?.environment == .sandbox)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToken?.environment == .production)
    }

    @Test func anActivityTokenTakesTheCorrectedEnvironment() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.registerActivity("m", "alice", "d1", token: 3)
        try await f.store.registerActivity("m", "alice", "d2", token: 4)
        #expect(try await f.store.correctEnvironment(token: apnsToken(3), environment: .sandbox) == 1)
        let tokens = try await f.store.allActivityTokens("m")
        #expect(tokens.map(\.deviceId) == ["d1", "d2"])
        #expect(tokens.map(\.environment) == [.sandbox, .production])
    }

    @Test func countsEveryHolderChangedWithAnEventEach() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 7)
        try await f.store.registerPushToStart("alice", "d2", token: 7)
        try await f.store.registerActivity("m", "bob", "d3", token: 7, appId: "com.example.b")
        #expect(try await f.store.correctEnvironment(token: apnsToken(7), environment: .sandbox) == 3)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToken?.environment == .sandbox)
        #expect(try await f.store.device(userId: "alice", deviceId: "d2")?.pushToStartToken?.environment == .sandbox)
        #expect(try await f.store.allActivityTokens("m").map(\.environment) == [.sandbox])
        let fingerprint = HistoryEvent.fingerprint(of: apnsToken(7))
        #expect(try await Set(f.store.history(userId: "alice", limit: 2).map { EventShape($0, withFingerprint: true) }) == [
            EventShape("d1", .push, .environmentCorrected, fingerprint: fingerprint),
            EventShape("d2", .pushToStart, .environmentCorrected, fingerprint: fingerprint),
        ])
        #expect(try await f.store.history(userId: "bob", limit: 1).map { EventShape($0, withFingerprint: true) } == [
            EventShape(appId: "com.example.b", "d3", .activity, activityId: "m", .environmentCorrected, fingerprint: fingerprint),
        ])
        // Already there: nothing changes, no event.
        #expect(try await f.store.correctEnvironment(token: apnsToken(7), environment: .sandbox) == 0)
        #expect(try await f.store.history(userId: "alice", limit: 100).count == 4)
        #expect(try await f.store.history(userId: "bob", limit: 100).count == 2)
    }

    @Test func anUnknownTokenUpdatesNothing() async throws {
        let f = try makeStore(); defer { f.close() }
        #expect(try await f.store.correctEnvironment(token: apnsToken(1), environment: .sandbox) == 0)
        try await f.store.register("alice", "d1", token: 1)
        #expect(try await f.store.correctEnvironment(token: apnsToken(2), environment: .sandbox) == 0)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToken?.environment == .production)
        #expect(try await f.store.history(userId: "alice", limit: 100).count == 1)
    }

    @Test func aTokenThatWasRemovedIsNoLongerCorrected() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.register("alice", "d1", token: 2)
        #expect(try await f.store.correctEnvironment(token: apnsToken(1), environment: .sandbox) == 0)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.environment == .production)
    }

    @Test func anUppercaseHexTokenMatches() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 0xabc)
        try await f.store.registerActivity("m", "alice", "d2", token: 0xabc)
        #expect(try await f.store.correctEnvironment(token: apnsToken(0xabc).uppercased(), environment: .sandbox) == 2)
        #expect(try await f.store.device(userId: "alice", deviceId: "d1")?.pushToken?.environment == .sandbox)
        #expect(try await f.store.allActivityTokens("m").first?.environment == .sandbox)
        // The event fingerprints the token as stored (lowercase), as the sender view carries it.
        #expect(try await f.store.history(userId: "alice", limit: 2).map(\.tokenFingerprint)
                == [KnownFingerprint.apnsABC, KnownFingerprint.apnsABC])
    }
}
