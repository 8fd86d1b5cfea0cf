import RegistryCore
import RegistryTestSupport
import Testing

/// `activityTokens(activityId:limit:cursor:)`: paging, stability, signed cursors.
struct FanOutTests {
    private func addToken(_ store: any RegistryStore, _ activity: String, user: String, _ n: Int) async throws {
        _ = try await store.registerActivityToken(ActivityTokenRegistration(
            activityId: activity, userId: user, deviceId: "d", token: apnsToken(n)))
    }

    @Test func pagesCoverEveryTokenAndTheLastCursorIsNil() async throws {
        let f = try makeStore(); defer { f.close() }
        for i in 0..<5 { try await addToken(f.store, "m", user: "u\(i)", i) }
        let first = try await f.store.activityTokens(activityId: "m", limit: 2, cursor: nil)
        let afterFirst = try #require(first.nextCursor)
        let second = try await f.store.activityTokens(activityId: "m", limit: 2, cursor: afterFirst)
        let afterSecond = try #require(second.nextCursor)
        let third = try await f.store.activityTokens(activityId: "m", limit: 2, cursor: afterSecond)
        #expect((first.tokens + second.tokens + third.tokens).map(\.userId) == ["u0", "u1", "u2", "u3", "u4"])
        #expect(third.tokens.count == 1 && third.nextCursor == nil)
        #expect(first.tokens[0] == ActivityToken(activityId: "m", userId: "u0", deviceId: "d", token: apnsToken(0),
                                                 environment: .production, lastSeenAt: f.clock.now()))
    }

    @Test func aFullLastPageHasNoCursor() async throws {
        let f = try makeStore(); defer { f.close() }
        for i in 0..<4 { try await addToken(f.store, "m", user: "u\(i)", i) }
        let first = try await f.store.activityTokens(activityId: "m", limit: 2, cursor: nil)
        let afterFirst = try #require(first.nextCursor)
        let second = try await f.store.activityTokens(activityId: "m", limit: 2, cursor: afterFirst)
        #expect(second.tokens.count == 2 && second.nextCursor == nil)
        #expect(try await f.store.activityTokens(activityId: "m", limit: 4, cursor: nil).nextCursor == nil)
        #expect(try await f.store.activityTokens(activityId: "empty", limit: 4, cursor: nil) == ActivityTokenPage(tokens: [], nextCursor: nil))
    }

    @Test func activitiesWhoseIdsSharePrefixesStayApart() async throws {
        let f = try makeStore(); defer { f.close() }
        try await addToken(f.store, "m1", user: "a", 1)
        try await addToken(f.store, "m10", user: "b", 2)
        #expect(try await f.store.allActivityTokens("m1").map(\.userId) == ["a"])
        #expect(try await f.store.allActivityTokens("m10").map(\.userId) == ["b"])
    }

    @Test func tokensPresentForTheWholeWalkAppearExactlyOnceWhileTokensChange() async throws {
        let f = try makeStore(); defer { f.close() }
        for i in 0..<40 { try await addToken(f.store, "m", user: "u\(i + 100)", i) }
        var seen: [String] = []
        var removed = Set<String>()
        var cursor: String?
        var round = 0
        repeat {
            let page = try await f.store.activityTokens(activityId: "m", limit: 3, cursor: cursor)
            seen += page.tokens.map(\.userId)
            cursor = page.nextCursor
            // Mid-walk churn: new tokens before and after the cursor, one removed, one refreshed.
            try await addToken(f.store, "m", user: "u\(round)", 1_000 + round)
            try await addToken(f.store, "m", user: "u\(round + 900)", 2_000 + round)
            let victim = "u\(100 + (round * 7) % 40)"
            try await f.store.removeActivityToken(activityId: "m", userId: victim, deviceId: "d")
            removed.insert(victim)
            try await addToken(f.store, "m", user: "u\(100 + (round * 11) % 40)", 3_000 + round)
            round += 1
        } while cursor != nil
        #expect(Set(seen).count == seen.count, "no token is returned twice")
        let stable = (0..<40).map { "u\($0 + 100)" }.filter { !removed.contains($0) }
        for user in stable { #expect(seen.contains(user), "\(user) was present for the whole walk") }
    }

    @Test func tamperedCursorIsRejected() async throws {
        let f = try makeStore(); defer { f.close() }
        for i in 0..<3 { try await addToken(f.store, "m", user: "u\(i)", i) }
        let cursor = try #require(try await f.store.activityTokens(activityId: "m", limit: 1, cursor: nil).nextCursor)
        var characters = Array(cursor)
        characters[characters.count / 2] = characters[characters.count / 2] == "A" ? "B" : "A"
        for bad in [String(characters), cursor + "A", "", "not a cursor!", String(cursor.dropLast(2))] {
            let error = await registryError { _ = try await f.store.activityTokens(activityId: "m", limit: 1, cursor: bad) }
            guard case .invalidField(field: "cursor", _)? = error else {
                Issue.record("cursor \(bad) gave \(String(describing: error))")
                continue
            }
        }
    }

    @Test func cursorOfAnotherActivityIsRejected() async throws {
        let f = try makeStore(); defer { f.close() }
        for i in 0..<3 { try await addToken(f.store, "m1", user: "u\(i)", i) }
        try await addToken(f.store, "m2", user: "u9", 9)
        let cursor = try #require(try await f.store.activityTokens(activityId: "m1", limit: 1, cursor: nil).nextCursor)
        let error = await registryError { _ = try await f.store.activityTokens(activityId: "m2", limit: 1, cursor: cursor) }
        guard case .invalidField(field: "cursor", _)? = error else {
            Issue.record("expected a cursor error, got \(String(describing: error))")
            return
        }
    }

    @Test func cursorStaysValidAfterReopen() async throws {
        let f = try makeStore(); defer { f.close() }
        for i in 0..<3 { try await addToken(f.store, "m", user: "u\(i)", i) }
        let cursor = try #require(try await f.store.activityTokens(activityId: "m", limit: 1, cursor: nil).nextCursor)
        try f.reopen()
        #expect(try await f.store.activityTokens(activityId: "m", limit: 5, cursor: cursor).tokens.map(\.userId) == ["u1", "u2"])
    }
}
