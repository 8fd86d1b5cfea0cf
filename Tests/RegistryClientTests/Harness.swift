import Foundation
@testable import RegistryClient
import Testing

/// A client wired to a fake registry and a manual clock, for one test.
struct Harness {
    let clock: ManualClock
    let server: FakeRegistry
    let store: InMemorySequenceStore
    let signOuts: InMemorySignOutStore
    let client: RegistryClient

    /// Jitter is fixed at its maximum so backoff waits are exact; the
    /// coalescing window never ends by itself (the clock does not move), so
    /// a test decides when to send with `flush()`.
    init(server: FakeRegistry = FakeRegistry(), store: InMemorySequenceStore = InMemorySequenceStore(),
         signOuts: InMemorySignOutStore = InMemorySignOutStore(), clock: ManualClock = ManualClock(),
         jitter: @escaping @Sendable () -> Double = { 1 }) {
        self.clock = clock
        self.server = server
        self.store = store
        self.signOuts = signOuts
        var configuration = RegistryClient.Configuration()
        configuration.jitter = jitter
        client = RegistryClient(deviceId: "phone-1", osVersion: "18.2", appVersion: "2.1.0", transport: server,
                                sequenceStore: store, signOutStore: signOuts, clock: clock, configuration: configuration)
    }

    /// A client whose user is signed in with a token the fake reads back.
    static func signedIn(_ user: String = "alice", token: String = tokenA) -> Harness {
        let harness = Harness()
        harness.client.signedIn(userId: user, credentials: credentials(user))
        harness.client.pushTokenReceived(PushToken(value: token))
        return harness
    }

    /// Moves the clock and sends whatever became due.
    func advance(seconds: Double) async {
        clock.advance(by: .milliseconds(Int64(seconds * 1000)))
        await client.flush()
    }
}

/// The fake registry takes `token-<user>` as the credential for `<user>`.
func credentials(_ user: String) -> @Sendable () async throws -> String {
    { "token-\(user)" }
}

let tokenA = String(repeating: "a1", count: 32)
let tokenB = String(repeating: "b2", count: 32)
let tokenC = String(repeating: "c3", count: 32)

/// Waits (in real time, generously) until `condition` holds; for what a
/// background task or timer does on its own. Fails the test on time-out.
func eventually(_ what: String, timeout: Duration = .seconds(60),
                _ condition: @Sendable () async -> Bool) async {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while clock.now < deadline {
        if await condition() { return }
        try? await Task.sleep(for: .milliseconds(5))
    }
    Issue.record("timed out waiting for \(what)")
}
