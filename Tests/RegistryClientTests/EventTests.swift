import Foundation
@testable import RegistryClient
import Testing

/// What the client tells the app through `events`.
@Suite struct EventTests {
    /// The events emitted so far, after closing the client (which ends the stream).
    private func events(_ harness: Harness) async -> [RegistryEvent] {
        await harness.client.close()
        var events: [RegistryEvent] = []
        for await event in harness.client.events { events.append(event) }
        return events
    }

    @Test func aRefusedPayloadABackoffAndASignOutAreReported() async {
        let harness = Harness.signedIn()
        harness.server.script { request in
            if request.method == "POST", String(decoding: request.body ?? Data(), as: UTF8.self).contains(tokenA) {
                return RegistryResponse(status: 400, body: Data(#"{"error":{"code":"invalid_field","message":"pushToken"}}"#.utf8))
            }
            return request.method == "DELETE" ? RegistryResponse(status: 503) : nil
        }
        await harness.client.flush()
        harness.client.pushTokenReceived(PushToken(value: tokenB))
        await harness.client.flush()
        harness.client.signedOut()
        await harness.client.flush()
        harness.server.script(nil)
        await harness.advance(seconds: 1)
        let start = harness.clock.date.addingTimeInterval(-1)
        #expect(await events(harness) == [
            .refused(.device, status: 400, reason: "invalid_field"),
            .applied(.device),
            .backingOff(until: start.addingTimeInterval(1), cause: .unavailable),
            .signOutDelivered,
        ])
    }

    @Test func anEndlessUnauthorizedLoopIsVisible() async {
        let harness = Harness.signedIn()
        harness.server.script { _ in RegistryResponse(status: 401) }
        await harness.client.flush()
        await harness.advance(seconds: 1)
        let events = await events(harness)
        #expect(events.count == 2)
        #expect(events.allSatisfy { if case .backingOff(_, .unauthenticated) = $0 { true } else { false } })
    }

    @Test func aResolvedConflictIsReported() async {
        let harness = Harness.signedIn()
        harness.server.storeSequence(UInt64(harness.clock.date.timeIntervalSince1970 * 1000) + 50, user: "alice")
        await harness.client.flush()
        #expect(await events(harness) == [.conflictResolved(.device), .applied(.device)])
    }

    @Test func eventsCarryNoTokenOrCredential() async {
        let harness = Harness.signedIn()
        harness.client.activityTokenReceived(activityId: "match-1", token: PushToken(value: tokenC))
        await harness.client.flush()
        let text = await events(harness).map { String(describing: $0) }.joined()
        #expect(!text.contains(tokenA) && !text.contains(tokenC) && !text.contains("token-alice"))
        #expect(text.contains("match-1"))
    }
}
