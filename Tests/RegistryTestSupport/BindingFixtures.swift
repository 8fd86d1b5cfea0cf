@testable import RegistryCore
@testable import TokenSealing
import Testing

/// `token` sealed as before sealed values were bound to their record:
/// format 1, its kind as the context.
package func unboundSeal(_ token: String, _ kind: TokenKind) -> [UInt8] {
    var nonce = [UInt8](repeating: 0, count: TokenSealer.nonceLength)
    for i in nonce.indices { nonce[i] = UInt8.random(in: 0...255) }
    return nonce.withUnsafeBytes {
        TestKeys.vault.sealer.seal(Array(token.utf8), context: [kind.rawValue], nonce: $0, format: 1)
    }
}

/// A token of each kind for alice/d1 (1, 2, 3 in activity "m") and bob's
/// push token (4) in com.acme.one.
package func fillForBinding(_ f: StoreFixture) async throws {
    try await f.store.register("alice", "d1", token: 1)
    try await f.store.registerPushToStart("alice", "d1", token: 2)
    try await f.store.registerActivity("m", "alice", "d1", token: 3)
    try await f.store.register("bob", app: "com.acme.one", "d2", token: 4)
}

/// Every token `fillForBinding` wrote opens, `check` is clean, and the
/// owner index still finds them.
package func expectEveryTokenOpensAfterBinding(_ f: StoreFixture) async throws {
    let alice = try #require(try await f.store.device(userId: "alice", deviceId: "d1"))
    #expect(alice.pushToken?.token == apnsToken(1) && alice.pushToStartToken?.token == apnsToken(2))
    #expect(try await f.store.allActivityTokens("m").map(\.token) == [apnsToken(3)])
    #expect(try await f.store.devices(userIds: ["bob"]).first?.devices.first?.pushToken?.token == apnsToken(4))
    #expect(try await f.check() == [])
    #expect(try await f.store.removeToken(apnsToken(4), reason: .unregistered, registeredBefore: nil) == 1)
}
