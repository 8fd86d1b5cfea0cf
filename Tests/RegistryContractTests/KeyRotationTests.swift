import Foundation
import Synchronization
@testable import RegistryCore
@testable import RegistryLMDB
@testable import RegistryPostgres
import TokenSealing
import RegistryTestSupport
import RegistrydTestSupport
import Testing

/// Token key rotation that cannot lose a token (`TokenKeyRotation`), on
/// either backend: one at a time, resumed after a stop, and (PostgreSQL,
/// where one process can hold several nodes) never retiring a key a live
/// node still needs, while such a node refuses to seal rather than seal
/// under the old key.
struct KeyRotationTests {
    /// A key file in the fixture's directory, holding `ring`.
    private func keyFile(_ f: StoreFixture, _ ring: TokenKeyRing) throws -> String {
        let path = f.directory + "/token-keys"
        try TokenKeyFile.write(ring, to: path)
        return path
    }

    /// A store whose reload source is the key file at `path` (what a server has).
    private func makeRotatable(_ ring: TokenKeyRing, path: @escaping @Sendable () -> String) throws -> StoreFixture {
        try makeStore { configuration in
            configuration.tokenKeys = ring
            configuration.reloadTokenKeys = { try TokenKeyFile.load(path: path()) }
        }
    }

    private func fill(_ store: any RegistryStore, users: Int = 6) async throws {
        for n in 0..<users {
            try await store.register("user\(n)", "phone", token: n)
            try await store.registerActivity("match", "user\(n)", "phone", token: 1_000 + n)
        }
    }

    private func expectEveryToken(_ store: any RegistryStore, users: Int = 6) async throws {
        for n in 0..<users {
            #expect(try await store.device(userId: "user\(n)", deviceId: "phone")?.pushToken?.token == apnsToken(n))
        }
        #expect(Set(try await store.allActivityTokens("match").map(\.token)) == Set((0..<users).map { apnsToken(1_000 + $0) }))
    }

    @Test func aRotationReSealsEveryTokenAndRetiresTheOldKey() async throws {
        let ring = try TokenKeyRing.generate()
        let path = Mutex("")
        let f = try makeRotatable(ring) { path.withLock { $0 } }; defer { f.close() }
        path.withLock { $0 = try! keyFile(f, ring) }
        try await fill(f.store)
        let file = path.withLock { $0 }
        let outcome = try await offThePool { [store = f.maintenance] in Result { try TokenKeyRotation(store: store, keyFile: file).run() } }.get()
        #expect(outcome == .init(newKeyID: 2, resumed: false, resealed: 12, retiredKeyIDs: [1]))
        #expect(try TokenKeyFile.load(path: file).sealingKeys.map(\.id) == [2])
        #expect(try await f.maintenance.sealingKeyUsage() == [2: 12])
        try await expectEveryToken(f.store)
        // Reopened with the new file alone: key 1 is no longer asked for.
        f.reconfigure { $0.tokenKeys = try! TokenKeyFile.load(path: file) }
        try f.reopen()
        try await expectEveryToken(f.store)
        #expect(try await f.check() == [])
    }

    @Test func twoRotationsAtOnceAreRefused() async throws {
        let f = try makeStore(); defer { f.close() }
        let lock = try f.maintenance.lockKeyRotation()
        #expect(throws: KeyRotationError.self) { _ = try f.maintenance.lockKeyRotation() }
        lock.release()
        try f.maintenance.lockKeyRotation().release()
    }

    /// A rotation stopped after the key file gained the new key and some
    /// tokens were re-sealed (a kill): the file holds both keys, nothing is
    /// lost, and running it again finishes with the same new key.
    @Test func aRotationStoppedHalfWayIsFinishedByTheNextRun() async throws {
        let ring = try TokenKeyRing.generate()
        let path = Mutex("")
        let f = try makeRotatable(ring) { path.withLock { $0 } }; defer { f.close() }
        let file = try keyFile(f, ring)
        path.withLock { $0 = file }
        try await fill(f.store)
        // What a killed rotation left: key 2 in the file, announced, a few tokens re-sealed.
        let rotated = try ring.addingRandomKey()
        try TokenKeyFile.replace(rotated, at: file)
        try await f.maintenance.useSealingKeys(rotated)
        try await f.maintenance.announceSealingKey()
        try await f.store.register("late", "phone", token: 77)
        f.reconfigure { $0.tokenKeys = rotated }
        try f.reopen()
        try await expectEveryToken(f.store)
        let outcome = try await offThePool { [store = f.maintenance] in Result { try TokenKeyRotation(store: store, keyFile: file).run() } }.get()
        #expect(outcome.resumed && outcome.newKeyID == 2 && outcome.retiredKeyIDs == [1])
        #expect(try TokenKeyFile.load(path: file).sealingKeys.map(\.id) == [2])
        try await expectEveryToken(f.store)
        #expect(try await f.store.device(userId: "late", deviceId: "phone")?.pushToken?.token == apnsToken(77))
    }

    /// A process that cannot load the announced key (its key file is an
    /// old copy) refuses writes that store a token, with a 503, instead of
    /// sealing under the key the rotation is retiring; writes that store no
    /// token, and reads, go on.
    @Test func aProcessWithoutTheAnnouncedKeyRefusesToSealButStillReadsAndDeletes() async throws {
        let ring = try TokenKeyRing.generate()
        let f = try makeRotatable(ring) { "/nonexistent/token-keys" }; defer { f.close() }
        try await f.store.register("alice", "phone", token: 1)
        try await f.store.register("bob", "phone", token: 2)
        // A rotation elsewhere announces key 2; this process keeps its old ring and cannot reload.
        try await f.maintenance.useSealingKeys(try ring.addingRandomKey())
        try await f.maintenance.announceSealingKey()
        try await f.maintenance.useSealingKeys(ring)
        let refused = await registryError { try await f.store.register("alice", "phone", token: 3) }
        guard case .unavailable(let reason)? = refused else {
            Issue.record("expected a 503, got \(String(describing: refused))")
            return
        }
        #expect(reason.contains("sealing key 2"))
        #expect(try await f.store.device(userId: "alice", deviceId: "phone")?.pushToken?.token == apnsToken(1))
        try await f.store.signOut(userId: "bob", deviceId: "phone", sequence: nil)
        #expect(try await f.store.device(userId: "bob", deviceId: "phone") == nil)
        try await f.store.register("alice", "phone")  // no token to seal: applied
        #expect(try await f.maintenance.sealingKeyUsage() == [1: 1], "nothing was sealed under the old key after the announcement")
        // Restarted with that old key file, it refuses to open at all, naming the key.
        #expect(throws: RegistryOpenError.wrongTokenKeys(
            detail: "a key rotation made sealing key 2 current, and the file does not hold it")) { try f.reopen() }
    }

    /// A reload is checked: a key file holding another key under the
    /// announced id (a copy made elsewhere) is not installed.
    @Test func aReloadOfAFileWithAnotherKeyUnderTheSameIdIsRefused() async throws {
        let ring = try TokenKeyRing.generate()
        let forged = try ring.addingRandomKey()
        let f = try makeRotatable(ring) { "" }; defer { f.close() }
        f.reconfigure { $0.reloadTokenKeys = { forged } }
        try f.reopen()
        try await f.store.register("alice", "phone", token: 1)
        // The genuine key 2 is recorded and announced by a rotation elsewhere.
        try await f.maintenance.useSealingKeys(try ring.addingRandomKey())
        try await f.maintenance.announceSealingKey()
        try await f.maintenance.useSealingKeys(ring)
        let refused = await registryError { try await f.store.register("alice", "phone", token: 2) }
        #expect(refused.map { if case .unavailable = $0 { true } else { false } } == true, "\(String(describing: refused))")
        #expect(try await f.maintenance.sealingKeyUsage() == [1: 1])
        #expect(try await f.store.device(userId: "alice", deviceId: "phone")?.pushToken?.token == apnsToken(1))
    }
}
