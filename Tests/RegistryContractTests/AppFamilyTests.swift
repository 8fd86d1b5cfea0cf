import RegistryCore
import RegistryTestSupport
import Testing

/// docs/api.md "App families": records keyed by (userId, appId, deviceId).
struct AppFamilyTests {
    private let appA = "com.example.a"
    private let appB = "com.example.b"

    @Test func twoAppsOnOneDeviceKeepTwoRecordsWithTwoTokens() async throws {
        let f = try makeStore(); defer { f.close() }
        #expect(try await f.store.register("alice", app: appA, "phone", token: 1).created)
        #expect(try await f.store.register("alice", app: appB, "phone", token: 2).created)
        let a = try #require(try await f.store.device(userId: "alice", appId: appA, deviceId: "phone"))
        let b = try #require(try await f.store.device(userId: "alice", appId: appB, deviceId: "phone"))
        #expect(a.appId == appA && a.pushToken?.token == apnsToken(1))
        #expect(b.appId == appB && b.pushToken?.token == apnsToken(2))
        #expect(try await f.store.device(userId: "alice", deviceId: "phone") == nil, "the v1 read is the default app's")
        let stats = try await f.store.stats()
        #expect(stats.devices == 2 && stats.pushTokens == 2)
    }

    @Test func aUsersDevicesListEveryAppUnlessNarrowed() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", app: appB, "phone", token: 2)
        try await f.store.register("alice", app: appA, "phone", token: 1)
        try await f.store.register("alice", "tablet", token: 3)
        try await f.store.register("alice", app: appA, "tablet", token: 4)
        // One instant for all: ties go by appId bytes, then deviceId bytes.
        let all = try await f.store.devices(userId: "alice", appId: nil)
        #expect(all.map { "\($0.appId)/\($0.deviceId)" }
                == ["\(appA)/phone", "\(appA)/tablet", "\(appB)/phone", "default/tablet"])
        #expect(all.map { $0.pushToken?.token } == [apnsToken(1), apnsToken(4), apnsToken(2), apnsToken(3)])
        #expect(try await f.store.devices(userId: "alice") == all, "the v1 list sees every app")
        let onlyA = try await f.store.devices(userId: "alice", appId: appA)
        #expect(onlyA.map(\.deviceId) == ["phone", "tablet"] && onlyA.allSatisfy { $0.appId == appA })
        #expect(try await f.store.devices(userId: "alice", appId: "default").map(\.deviceId) == ["tablet"])
        f.clock.advance(seconds: 1)
        try await f.store.register("alice", app: appB, "phone")
        #expect(try await f.store.devices(userId: "alice", appId: nil).first?.appId == appB, "most recently seen first")
    }

    @Test func theSenderReadOfManyUsersFiltersByApp() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", app: appA, "d1", token: 1)
        try await f.store.register("alice", app: appB, "d1", token: 2)
        try await f.store.register("bob", app: appB, "d2", token: 3)
        let all = try await f.store.devices(userIds: ["bob", "alice"], appId: nil)
        #expect(all.map(\.userId) == ["alice", "bob"])
        #expect(all[0].devices.map(\.appId) == [appA, appB])
        let onlyA = try await f.store.devices(userIds: ["bob", "alice"], appId: appA)
        #expect(onlyA.map(\.userId) == ["alice"], "a user with no device in the app is absent")
        #expect(onlyA.first?.devices.map { $0.pushToken?.token } == [apnsToken(1)])
    }

    @Test func theDeviceCapCountsPerApp() async throws {
        let f = try makeStore(maxDevicesPerUser: 2); defer { f.close() }
        try await f.store.register("alice", app: appB, "b1", token: 100)
        try await f.store.register("alice", app: appB, "b2", token: 101)
        for n in 1...4 {
            f.clock.advance(seconds: 1)
            try await f.store.register("alice", app: appA, "a\(n)", token: n)
        }
        #expect(try await f.store.devices(userId: "alice", appId: appA).map(\.deviceId) == ["a4", "a3"])
        #expect(try await f.store.devices(userId: "alice", appId: appB).map(\.deviceId) == ["b1", "b2"],
                "another app's devices are not evicted")
        // The default app has its own cap too.
        try await f.store.register("alice", "x1")
        try await f.store.register("alice", "x2")
        #expect(try await f.store.devices(userId: "alice", appId: nil).count == 6)
    }

    @Test func pushToStartAndActivityRegistrationsCreateDevicesUnderTheCapOfTheirApp() async throws {
        let f = try makeStore(maxDevicesPerUser: 2); defer { f.close() }
        try await f.store.register("alice", "phone", token: 100)
        let created = try await f.store.registerPushToStart("alice", "a1", token: 1, appId: appA)
        #expect(created.appId == appA)
        f.clock.advance(seconds: 1)
        try await f.store.registerActivity("m", "alice", "a2", token: 2, appId: appA)
        f.clock.advance(seconds: 1)
        try await f.store.registerActivity("m", "alice", "a3", token: 3, appId: appA)
        #expect(try await f.store.devices(userId: "alice", appId: appA).map(\.deviceId) == ["a3", "a2"])
        #expect(try await f.store.device(userId: "alice", deviceId: "phone")?.pushToken?.token == apnsToken(100))
        #expect(try await f.store.historyShapes("alice", limit: 2).last
                == EventShape(appId: appA, "a1", .pushToStart, .removed, reason: .deviceCap))
    }

    @Test func eachAppsRecordExpiresOnItsOwn() async throws {
        let f = try makeStore { $0.limits.deviceTTL = .seconds(10 * 3_600) }; defer { f.close() }
        try await f.store.register("alice", app: appA, "phone", token: 1)
        try await f.store.register("alice", app: appB, "phone", token: 2)
        f.clock.advance(seconds: 6 * 3_600)
        try await f.store.register("alice", app: appB, "phone")
        f.clock.advance(seconds: 5 * 3_600)
        #expect(try await f.store.sweep(dryRun: false) == SweepCounts(devices: 1))
        #expect(try await f.store.devices(userId: "alice", appId: nil).map(\.appId) == [appB])
        #expect(try await f.store.historyShapes("alice", limit: 1) == [EventShape(appId: appA, "phone", .push, .removed, reason: .expired)])
    }

    @Test func signOutOfOneAppLeavesTheOther() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", app: appA, "phone", token: 1)
        try await f.store.registerActivity("m", "alice", "phone", token: 2, appId: appA)
        try await f.store.register("alice", app: appB, "phone", token: 3)
        try await f.store.registerPushToStart("alice", "phone", token: 4, appId: appB)
        try await f.store.registerActivity("m", "alice", "phone", token: 5, appId: appB)
        try await f.store.signOut(userId: "alice", appId: appA, deviceId: "phone", sequence: nil)
        #expect(try await f.store.device(userId: "alice", appId: appA, deviceId: "phone") == nil)
        let b = try #require(try await f.store.device(userId: "alice", appId: appB, deviceId: "phone"))
        #expect(b.pushToken?.token == apnsToken(3) && b.pushToStartToken?.token == apnsToken(4) && b.activityCount == 1)
        #expect(try await f.store.allActivityTokens("m").map(\.appId) == [appB])
        // The v1 sign-out is the default app's: neither app's record is touched.
        try await f.store.signOut(userId: "alice", deviceId: "phone", sequence: nil)
        #expect(try await f.store.device(userId: "alice", appId: appB, deviceId: "phone") != nil)
    }

    @Test func theTokenDeletesNameOneApp() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.registerPushToStart("alice", "phone", token: 1, appId: appA)
        try await f.store.registerPushToStart("alice", "phone", token: 2, appId: appB)
        try await f.store.registerActivity("m", "alice", "phone", token: 3, appId: appA)
        try await f.store.registerActivity("m", "alice", "phone", token: 4, appId: appB)
        try await f.store.removePushToStartToken(userId: "alice", appId: appA, deviceId: "phone")
        try await f.store.removeActivityToken(activityId: "m", userId: "alice", appId: appB, deviceId: "phone")
        #expect(try await f.store.device(userId: "alice", appId: appA, deviceId: "phone")?.pushToStartToken == nil)
        #expect(try await f.store.device(userId: "alice", appId: appB, deviceId: "phone")?.pushToStartToken?.token == apnsToken(2))
        #expect(try await f.store.allActivityTokens("m").map { "\($0.appId) \($0.token)" } == ["\(appA) \(apnsToken(3))"])
        #expect(try await f.store.device(userId: "alice", appId: appA, deviceId: "phone")?.activityCount == 1)
        #expect(try await f.store.device(userId: "alice", appId: appB, deviceId: "phone")?.activityCount == 0)
    }

    @Test func theOneOwnerRuleIsGlobalAcrossApps() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", app: appA, "phone", token: 1)
        try await f.store.register("alice", app: appB, "phone", token: 1)
        #expect(try await f.store.device(userId: "alice", appId: appA, deviceId: "phone") == nil)
        #expect(try await f.store.device(userId: "alice", appId: appB, deviceId: "phone")?.pushToken?.token == apnsToken(1))
        #expect(try await f.store.historyShapes("alice", limit: 2) == [
            EventShape(appId: appB, "phone", .push, .registered),
            EventShape(appId: appA, "phone", .push, .removed, reason: .movedToDevice),
        ])
        // Across users and apps, for each token kind.
        try await f.store.registerPushToStart("alice", "phone", token: 2, appId: appA)
        try await f.store.registerPushToStart("bob", "tablet", token: 2, appId: appB)
        #expect(try await f.store.device(userId: "alice", appId: appA, deviceId: "phone") == nil)
        try await f.store.registerActivity("m", "alice", "phone", token: 3, appId: appB)
        try await f.store.registerActivity("m", "bob", "tablet", token: 3)
        #expect(try await f.store.allActivityTokens("m").map { "\($0.userId) \($0.appId)" } == ["bob default"])
        #expect(try await f.store.device(userId: "alice", appId: appB, deviceId: "phone")?.activityCount == 0)
        #expect(try await f.check() == [])
    }

    @Test func theActivityFanOutCarriesAndFiltersByApp() async throws {
        let f = try makeStore(); defer { f.close() }
        for i in 0..<7 {
            try await f.store.registerActivity("m", "u\(i)", "d", token: 100 + i, appId: appA)
            try await f.store.registerActivity("m", "u\(i)", "d", token: 200 + i, appId: appB)
            if i % 3 == 0 { try await f.store.registerActivity("m", "u\(i)", "d", token: 300 + i) }
        }
        let registered = try await f.store.registerActivity("m", "z", "d", token: 400, appId: appB)
        #expect(registered.appId == appB)
        let all = try await f.store.allActivityTokens("m")
        #expect(all.count == 7 + 8 + 3)
        #expect(Set(all.map(\.appId)) == [appA, appB, "default"])
        #expect(all.allSatisfy { t in
            t.appId == appA ? t.token == apnsToken(100 + Int(t.userId.dropFirst())!)
                : t.appId == appB ? t.token == apnsToken(t.userId == "z" ? 400 : 200 + Int(t.userId.dropFirst())!)
                : t.token == apnsToken(300 + Int(t.userId.dropFirst())!)
        })
        for (app, expected) in [(appA, 7), (appB, 8), ("default", 3)] {
            for pageSize in [1, 2, 3, 1_000] {
                var walked: [ActivityToken] = []
                var cursor: String?
                var pages = 0
                repeat {
                    let page = try await f.store.activityTokens(activityId: "m", appId: app, limit: pageSize, cursor: cursor)
                    #expect(page.tokens.count <= pageSize)
                    #expect(!page.tokens.isEmpty, "no empty page before the end")
                    walked += page.tokens
                    cursor = page.nextCursor
                    pages += 1
                } while cursor != nil && pages < 100
                #expect(walked.count == expected, "\(app), pages of \(pageSize)")
                #expect(walked.allSatisfy { $0.appId == app })
                #expect(Set(walked.map(\.userId)).count == walked.count, "each token once")
                #expect(walked == all.filter { $0.appId == app }, "the filtered walk keeps fan-out order")
            }
        }
    }

    @Test func tombstonesArePerApp() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", app: appA, "phone", sequence: 4)
        try await f.store.register("alice", app: appB, "phone", sequence: 4)
        try await f.store.signOut(userId: "alice", appId: appA, deviceId: "phone", sequence: 5)
        #expect(await registryError { try await f.store.register("alice", app: appA, "phone", sequence: 5) } == .staleWrite)
        #expect(try await !f.store.register("alice", app: appB, "phone", sequence: 5).created)
        #expect(try await f.store.register("alice", "phone", sequence: 1).created)
        #expect(try await f.store.register("alice", app: appA, "phone", sequence: 6).created)
    }

    @Test func theTombstoneCapCountsPerApp() async throws {
        // maxDevicesPerUser 1: two tombstones per user and app.
        let f = try makeStore(maxDevicesPerUser: 1); defer { f.close() }
        try await f.store.signOut(userId: "alice", appId: appB, deviceId: "b1", sequence: 5)
        try await f.store.signOut(userId: "alice", appId: appB, deviceId: "b2", sequence: 5)
        for n in 1...3 {
            f.clock.advance(seconds: 1)
            try await f.store.signOut(userId: "alice", appId: appA, deviceId: "a\(n)", sequence: 5)
        }
        #expect(try await f.store.stats().tombstones == 4)
        #expect(try await f.store.register("alice", app: appA, "a1", sequence: 1).created, "app A's oldest went")
        #expect(await registryError { try await f.store.register("alice", app: appA, "a2", sequence: 1) } == .staleWrite)
        #expect(await registryError { try await f.store.register("alice", app: appB, "b1", sequence: 1) } == .staleWrite)
        #expect(await registryError { try await f.store.register("alice", app: appB, "b2", sequence: 1) } == .staleWrite)
    }

    @Test func anAppNeverWrittenReadsAsEmpty() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", app: appA, "phone", token: 1)
        try await f.store.registerActivity("m", "alice", "phone", token: 2, appId: appA)
        let never = "com.example.never"
        #expect(try await f.store.device(userId: "alice", appId: never, deviceId: "phone") == nil)
        #expect(try await f.store.devices(userId: "alice", appId: never) == [])
        #expect(try await f.store.devices(userIds: ["alice"], appId: never) == [])
        #expect(try await f.store.activityTokens(activityId: "m", appId: never, limit: 10, cursor: nil)
                == ActivityTokenPage(tokens: [], nextCursor: nil))
        try await f.store.signOut(userId: "alice", appId: never, deviceId: "phone", sequence: nil)
        try await f.store.removePushToStartToken(userId: "alice", appId: never, deviceId: "phone")
        try await f.store.removeActivityToken(activityId: "m", userId: "alice", appId: never, deviceId: "phone")
        #expect(try await f.store.device(userId: "alice", appId: appA, deviceId: "phone")?.activityCount == 1)
        let stats = try await f.store.stats()
        #expect(stats.devices == 1 && stats.tombstones == 0)
        // A default app never written reads as empty too.
        let g = try makeStore(); defer { g.close() }
        try await g.store.register("alice", app: appA, "phone")
        #expect(try await g.store.device(userId: "alice", deviceId: "phone") == nil)
        #expect(try await g.store.devices(userId: "alice", appId: "default") == [])
    }

    @Test func aSequencedSignOutOfAnAppNeverWrittenStillLeavesItsTombstone() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.signOut(userId: "alice", appId: appA, deviceId: "phone", sequence: 5)
        #expect(await registryError { try await f.store.register("alice", app: appA, "phone", sequence: 3) } == .staleWrite)
        #expect(try await f.store.register("alice", app: appB, "phone", sequence: 3).created)
    }

    @Test func manyNewAppsAtOnceEachGetTheirOwnRecords() async throws {
        let f = try makeStore(); defer { f.close() }
        let store = f.store
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<24 {
                group.addTask { try await store.register("alice", app: "com.example.app\(i)", "phone", token: i) }
            }
            try await group.waitForAll()
        }
        for i in 0..<24 {
            let d = try await f.store.device(userId: "alice", appId: "com.example.app\(i)", deviceId: "phone")
            #expect(d?.appId == "com.example.app\(i)" && d?.pushToken?.token == apnsToken(i))
        }
        try f.reopen()
        #expect(try await Set(f.store.devices(userId: "alice", appId: nil).map(\.appId)).count == 24)
        #expect(try await f.store.device(userId: "alice", appId: "com.example.app7", deviceId: "phone")?.pushToken?.token == apnsToken(7))
    }
}
