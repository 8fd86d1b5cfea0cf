import Foundation
import Postgres
@testable import RegistryCore
@testable import RegistryPostgres
import RegistryTestSupport
import RegistrydTestSupport
import Testing
import TokenSealing


/// Several PostgreSQL nodes: the rotation waits for every live node.
@Suite(.requiresPostgres) struct KeyRotationAcrossNodesTests {
    @Test func aNodeThatHasNotLoadedTheNewKeyHoldsTheRotationAndNothingIsRetired() async throws {
        let ring = try TokenKeyRing.generate()
        let f = try makeStore { $0.tokenKeys = ring }; defer { f.close() }
        let directory = f.directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = directory + "/token-keys"
        try TokenKeyFile.write(ring, to: file)
        // A node whose own copy of the key file is not updated.
        let staleCopy = directory + "/stale-token-keys"
        try TokenKeyFile.write(ring, to: staleCopy)
        let lagging = try f.anotherNode { $0.reloadTokenKeys = { try TokenKeyFile.load(path: staleCopy) } }
        defer { lagging.shutdown() }
        lagging.start()
        try await lagging.register("alice", "phone", token: 1)
        let rotator = try f.anotherNode { $0.reloadTokenKeys = { try TokenKeyFile.load(path: file) } }
        defer { rotator.shutdown() }
        var rotation = TokenKeyRotation(store: rotator, keyFile: file)
        rotation.serverWait = .seconds(3)
        let stopped = await offThePool { [rotation] in Result { try rotation.run() } }
        guard case .failure(KeyRotationError.serversWithoutNewKey(let keyID, let servers, _)) = stopped else {
            Issue.record("expected the rotation to wait for the lagging node, got \(stopped)")
            return
        }
        #expect(keyID == 2 && servers.count == 1 && servers.first?.currentKeyID == 1)
        #expect(try TokenKeyFile.load(path: file).sealingKeys.map(\.id) == [1, 2], "nothing retired")
        // The lagging node refuses to seal, reads on.
        let refused = await registryError { try await lagging.register("alice", "phone", token: 2) }
        #expect(refused.map { if case .unavailable = $0 { true } else { false } } == true)
        #expect(try await lagging.device(userId: "alice", deviceId: "phone")?.pushToken?.token == apnsToken(1))
        // Given the new file, it loads it within a second; the rotation run again finishes.
        try TokenKeyFile.write(try TokenKeyFile.load(path: file), to: staleCopy)
        let outcome = try await offThePool { [rotation] in Result { try rotation.run() } }.get()
        #expect(outcome.resumed && outcome.newKeyID == 2 && outcome.retiredKeyIDs == [1])
        try await lagging.register("alice", "phone", token: 2)
        #expect(try await rotator.device(userId: "alice", deviceId: "phone")?.pushToken?.token == apnsToken(2))
        #expect(try await rotator.sealingKeyUsage() == [2: 1])
    }
}
