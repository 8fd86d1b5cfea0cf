import Foundation
import RegistryTestSupport
import Testing
@testable import RegistryCore
@testable import RegistryLMDB
@testable import RegistryPostgres

/// docs/api.md "Apps are declared by the operator": a caller cannot create
/// an app. A registration naming an undeclared app is refused; a delete
/// naming one writes nothing; records of an app no longer declared stay
/// readable by the sender, exported and swept, but take no registration.
struct DeclaredAppsTests {
    private let undeclared = "com.example.unlisted"

    /// Everything a store holds that a caller could grow: records, tombstones, history, apps.
    private func footprint(_ f: StoreFixture) async throws -> [Int] {
        let stats = try await f.store.stats()
        return [stats.devices, stats.pushTokens, stats.pushToStartTokens, stats.activityTokens, stats.tombstones,
                stats.historyEvents, try await f.store.storedApps().count]
    }

    @Test func registrationsNamingAnUndeclaredAppAreRefusedAndWriteNothing() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("bob", "phone", token: 1)
        let before = try await footprint(f)
        let refusals: [() async throws -> Void] = [
            { _ = try await f.store.registerDevice(DeviceRegistration(userId: "alice", deviceId: "d", pushToken: .set(apnsToken(2)),
                                                                      appId: self.undeclared)) },
            { _ = try await f.store.registerPushToStart("alice", "d", token: 3, appId: self.undeclared) },
            { _ = try await f.store.registerActivity("m", "alice", "d", token: 4, appId: self.undeclared) },
        ]
        for refusal in refusals {
            #expect(await registryError(refusal) == .invalidField(field: "appId", message: "is not a declared app"))
        }
        #expect(try await footprint(f) == before)
    }

    @Test func deletesNamingAnUndeclaredAppWriteNoAppNoTombstoneNoEvent() async throws {
        let f = try makeStore(); defer { f.close() }
        let before = try await footprint(f)
        try await f.store.signOut(userId: "alice", appId: undeclared, deviceId: "d", sequence: 7)
        try await f.store.signOut(userId: "alice", appId: undeclared, deviceId: "d", sequence: nil)
        try await f.store.removePushToStartToken(userId: "alice", appId: undeclared, deviceId: "d")
        try await f.store.removeActivityToken(activityId: "m", userId: "alice", appId: undeclared, deviceId: "d")
        #expect(try await footprint(f) == before)
        #expect(try await f.store.storedApps().contains(undeclared) == false)
        #expect(try await f.store.history(userId: "alice", limit: 100).isEmpty)
    }

    /// The attack that locked every app out: one user naming hundreds of
    /// made-up apps on every device route changes nothing for anyone, and
    /// the next user's plain v1 registration still works.
    @Test func oneUserNamingManyMadeUpAppsChangesNothingForAnyone() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("bob", "phone", token: 1)
        let before = try await footprint(f)
        for n in 0..<200 {
            let app = "com.attacker.app\(n)"
            _ = await registryError {
                _ = try await f.store.registerDevice(DeviceRegistration(userId: "mallory", deviceId: "d\(n)", appId: app))
            }
            try await f.store.signOut(userId: "mallory", appId: app, deviceId: "d\(n)", sequence: UInt64(n + 1))
        }
        #expect(try await footprint(f) == before)
        #expect(try await f.store.register("carol", "phone", token: 2).created)
    }

    /// An app dropped from the list: its records stay readable by the
    /// sender and are exported and swept, but take no new registration, and
    /// a device-level delete naming it changes nothing.
    @Test func anAppNoLongerDeclaredStaysReadableButTakesNoRegistration() async throws {
        let f = try makeStore(); defer { f.close() }
        let app = "com.acme.one"
        try await f.store.register("alice", app: app, "phone", token: 1)
        try await f.store.registerActivity("m", "alice", "phone", token: 2, appId: app)
        f.reconfigure { $0.limits.apps = .defaultOnly }
        try f.reopen()
        #expect(try await f.store.storedApps().contains(app))
        #expect(try await f.store.devices(userIds: ["alice"], appId: app).first?.devices.first?.pushToken?.token == apnsToken(1))
        #expect(try await f.store.allActivityTokens("m").map(\.appId) == [app])
        #expect(await registryError { try await f.store.register("alice", app: app, "phone", token: 3) }
                == .invalidField(field: "appId", message: "is not a declared app"))
        try await f.store.signOut(userId: "alice", appId: app, deviceId: "phone", sequence: nil)
        #expect(try await f.store.stats().devices == 1, "a delete naming an undeclared app writes nothing")
        var exported: [ExportedRecord] = []
        try await f.maintenance.export { exported.append($0) }
        #expect(exported.contains { if case .device(let d, _) = $0 { d.appId == app } else { false } })
        f.clock.advance(seconds: 91 * 86_400)
        #expect(try await f.store.sweep(dryRun: false).devices == 1)
        #expect(try await f.store.stats().devices == 0)
    }

    /// Import is an operator's restore: it brings back records of any app,
    /// declared here or not (a registry moving between backends).
    @Test func importRestoresRecordsOfAnUndeclaredApp() async throws {
        let source = try makeStore(); defer { source.close() }
        try await source.store.register("alice", app: "com.acme.two", "phone", token: 1)
        var exported: [ExportedRecord] = []
        try await source.maintenance.export { exported.append($0) }
        let target = try makeStore { $0.limits.apps = .defaultOnly }; defer { target.close() }
        #expect(try await target.maintenance.importRecords(exported) == exported.count)
        #expect(try await target.store.devices(userIds: ["alice"], appId: "com.acme.two").count == 1)
        #expect(try await target.store.storedApps().contains("com.acme.two"))
    }

    @Test func defaultIsAlwaysDeclaredAndAListRefusesABadId() throws {
        #expect(DeclaredApps.defaultOnly.ids == ["default"])
        #expect(try DeclaredApps(["com.b", "com.a", "com.b"]).ids == ["com.a", "com.b", "default"])
        #expect(throws: DeclaredApps.InvalidAppId.self) { try DeclaredApps(["com.a", "bad id"]) }
        #expect(throws: DeclaredApps.InvalidAppId.self) { try DeclaredApps([""]) }
    }
}
