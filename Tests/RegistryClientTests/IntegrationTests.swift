import Foundation
import RegistryClient
import Synchronization
import Testing

/// The client against the real `registryd` on a free port with a fresh data
/// directory. After each step the server's internal API must show exactly the
/// desired state. Real time, but short backoff, and no timing assertions:
/// each check waits for convergence with a generous deadline.
@Suite(.serialized) struct IntegrationTests {
    /// What the internal API shows for one user: device id → (push token,
    /// push-to-start token), each "-" when absent.
    private func devices(_ server: RegistrydProcess, _ user: String) async throws -> [String: String] {
        let list = try await server.internalGET("/internal/v1/users/\(user)/devices")["devices"] as? [[String: Any]] ?? []
        var result: [String: String] = [:]
        for device in list {
            let push = device["pushToken"] as? String ?? "-"
            let start = device["pushToStartToken"] as? String ?? "-"
            result[device["deviceId"] as? String ?? "?"] = "\(push) \(start)"
        }
        return result
    }

    /// The activity's fan-out: "user device token" per entry.
    private func activity(_ server: RegistrydProcess, _ activityId: String) async throws -> [String] {
        let tokens = try await server.internalGET("/internal/v1/activities/\(activityId)/tokens")["tokens"] as? [[String: Any]] ?? []
        return tokens.map { "\($0["userId"] as? String ?? "?") \($0["deviceId"] as? String ?? "?") \($0["token"] as? String ?? "?")" }
    }

    private func makeClient(_ server: RegistrydProcess, signOuts: any SignOutStore = InMemorySignOutStore()) -> RegistryClient {
        RegistryClient(deviceId: "phone-1", osVersion: "18.2", appVersion: "2.1.0", transport: server.transport,
                       sequenceStore: InMemorySequenceStore(), signOutStore: signOuts,
                       configuration: .init(coalescingWindow: .zero,
                                            retryPolicy: RetryPolicy(initialDelay: .milliseconds(100),
                                                                     maximumDelay: .milliseconds(400))))
    }

    private func signIn(_ client: RegistryClient, _ server: RegistrydProcess, _ user: String) async throws {
        let jwt = try await server.token(for: user)
        client.signedIn(userId: user) { jwt }
    }

    /// Flushes until the server shows what `check` wants (or 15 s pass).
    private func converge(_ client: RegistryClient, _ what: String,
                          _ check: @escaping @Sendable () async throws -> Bool) async {
        await eventually(what, timeout: .seconds(15)) {
            await client.flush()
            return (try? await check()) ?? false
        }
    }

    @Test func launchRotationActivitiesAndSignOut() async throws {
        let server = try await RegistrydProcess()
        defer { server.remove() }
        let client = makeClient(server)
        try await signIn(client, server, "alice")
        client.pushTokenReceived(PushToken(value: tokenA))
        client.pushToStartTokenReceived(PushToken(value: tokenC), attributesType: "MatchAttributes")
        await converge(client, "launch") { try await devices(server, "alice") == ["phone-1": "\(tokenA) \(tokenC)"] }

        client.pushTokenReceived(PushToken(value: tokenB))
        await converge(client, "rotation") { try await devices(server, "alice") == ["phone-1": "\(tokenB) \(tokenC)"] }

        let first = String(repeating: "d4", count: 32), second = String(repeating: "e5", count: 32)
        client.activityTokenReceived(activityId: "match-7", token: PushToken(value: first))
        await converge(client, "activity start") { try await activity(server, "match-7") == ["alice phone-1 \(first)"] }
        client.activityTokenReceived(activityId: "match-7", token: PushToken(value: second))
        await converge(client, "activity token rotation") { try await activity(server, "match-7") == ["alice phone-1 \(second)"] }
        client.activityEnded(activityId: "match-7")
        await converge(client, "activity end") { try await activity(server, "match-7").isEmpty }
        #expect(try await devices(server, "alice") == ["phone-1": "\(tokenB) \(tokenC)"])

        client.authorizationChanged(.denied)
        await converge(client, "permission withdrawn") { try await devices(server, "alice") == ["phone-1": "- \(tokenC)"] }

        client.signedOut()
        await converge(client, "sign-out") { try await devices(server, "alice").isEmpty }
        await client.close()
    }

    @Test func accountSwitchMovesTheRegistration() async throws {
        let server = try await RegistrydProcess()
        defer { server.remove() }
        let client = makeClient(server)
        try await signIn(client, server, "alice")
        client.pushTokenReceived(PushToken(value: tokenA))
        client.activityTokenReceived(activityId: "match-1", token: PushToken(value: tokenC))
        await converge(client, "alice registered") { try await devices(server, "alice") == ["phone-1": "\(tokenA) -"] }

        client.signedOut()
        try await signIn(client, server, "bob")
        client.activityEnded(activityId: "match-1")
        await converge(client, "bob registered, alice gone") {
            let bob = try await devices(server, "bob"), alice = try await devices(server, "alice")
            return bob == ["phone-1": "\(tokenA) -"] && alice.isEmpty
        }
        #expect(try await activity(server, "match-1").isEmpty)
        await client.close()
    }

    @Test func serverRestartInTheMiddle() async throws {
        let server = try await RegistrydProcess()
        defer { server.remove() }
        let client = makeClient(server)
        try await signIn(client, server, "alice")
        client.pushTokenReceived(PushToken(value: tokenA))
        await converge(client, "registered before the restart") { try await devices(server, "alice") == ["phone-1": "\(tokenA) -"] }

        server.stop()
        client.pushTokenReceived(PushToken(value: tokenB))
        client.activityTokenReceived(activityId: "match-9", token: PushToken(value: tokenC))
        await client.flush()
        try await server.start()
        await converge(client, "converged after the restart") {
            let alice = try await devices(server, "alice"), fanOut = try await activity(server, "match-9")
            return alice == ["phone-1": "\(tokenB) -"] && fanOut == ["alice phone-1 \(tokenC)"]
        }
        await client.close()
    }

    @Test func signOutWhileOfflineIsDeliveredByTheNextLaunch() async throws {
        let server = try await RegistrydProcess()
        defer { server.remove() }
        let signOuts = FileSignOutStore(url: URL(fileURLWithPath: server.directory + "/app/pending-sign-outs.json"))
        let first = makeClient(server, signOuts: signOuts)
        try await signIn(first, server, "alice")
        first.pushTokenReceived(PushToken(value: tokenA))
        await converge(first, "alice registered") { try await devices(server, "alice") == ["phone-1": "\(tokenA) -"] }

        server.stop()
        first.signedOut()
        await first.flush()
        await first.close()
        #expect(signOuts.load().map(\.userId) == ["alice"])

        try await server.start()
        let second = makeClient(server, signOuts: signOuts)
        await converge(second, "the relaunch deletes alice's registration") { try await devices(server, "alice").isEmpty }
        #expect(signOuts.load().isEmpty)
        await second.close()
    }

    @Test func accountSwitchUnderACredentialThatThrows() async throws {
        let server = try await RegistrydProcess()
        defer { server.remove() }
        let client = makeClient(server)
        let jwt = try await server.token(for: "alice")
        let loggedOut = Mutex(false)
        client.signedIn(userId: "alice") {
            if loggedOut.withLock({ $0 }) { throw URLError(.userAuthenticationRequired) }
            return jwt
        }
        client.pushTokenReceived(PushToken(value: tokenA))
        await converge(client, "alice registered") { try await devices(server, "alice") == ["phone-1": "\(tokenA) -"] }

        loggedOut.withLock { $0 = true }
        client.signedOut()
        try await signIn(client, server, "bob")
        await converge(client, "bob registered, alice gone") {
            let bob = try await devices(server, "bob"), alice = try await devices(server, "alice")
            return bob == ["phone-1": "\(tokenA) -"] && alice.isEmpty
        }
        await client.close()
    }

    @Test func theEventsOfARefusedPayload() async throws {
        let server = try await RegistrydProcess()
        defer { server.remove() }
        let client = makeClient(server)
        client.pushTokenReceived(PushToken(value: "not-hex"))
        try await signIn(client, server, "alice")
        await client.flush()
        client.pushTokenReceived(PushToken(value: tokenA))
        await converge(client, "the corrected token") { try await devices(server, "alice") == ["phone-1": "\(tokenA) -"] }
        client.signedOut()
        await converge(client, "sign-out") { try await devices(server, "alice").isEmpty }
        await client.close()
        var events: [RegistryEvent] = []
        for await event in client.events { events.append(event) }
        #expect(events == [.refused(.device, status: 400, reason: "invalid_field"), .applied(.device), .signOutDelivered])
    }
}
