import Foundation
@testable import RegistryClient
import Testing

/// The queue sends the fewest requests that get the server to the desired
/// state: bursts coalesce, unchanged states are skipped, changes are sent.
@Suite struct ConvergenceTests {
    @Test func burstOfTriggersBecomesOneRequest() async {
        let harness = Harness.signedIn()
        for _ in 0..<3 { harness.client.enteredForeground() }
        harness.client.pushTokenReceived(PushToken(value: tokenB))
        harness.client.versionsChanged(osVersion: "18.3", appVersion: "2.2.0")
        harness.client.pushTokenReceived(PushToken(value: tokenC))
        for _ in 0..<3 { harness.client.enteredForeground() }
        await harness.client.flush()

        #expect(harness.server.seen.count == 1)
        let device = harness.server.device("alice")
        #expect(device?.pushToken == tokenC)
        #expect(device?.appVersion == "2.2.0")

        harness.client.enteredForeground()
        harness.client.pushTokenReceived(PushToken(value: tokenC.uppercased()))
        await harness.client.flush()
        #expect(harness.server.seen.count == 1, "an unchanged state is not sent again")
    }

    @Test func coalescingWindowEndsOnItsOwn() async {
        let harness = Harness.signedIn()
        harness.client.pushTokenReceived(PushToken(value: tokenB))
        harness.client.enteredForeground()
        await eventually("the window's timer to send") {
            harness.clock.advance(by: .milliseconds(100))
            return harness.server.answered.count == 1
        }
        #expect(harness.server.seen.count == 1)
        #expect(harness.server.device("alice")?.pushToken == tokenB)
    }

    @Test func tokenRotationReplacesTheToken() async {
        let harness = Harness.signedIn()
        await harness.client.flush()
        harness.client.pushTokenReceived(PushToken(value: tokenB))
        await harness.client.flush()

        let seen = harness.server.seen
        #expect(seen.count == 2)
        #expect(seen.map { $0.body["pushToken"] as? String } == [tokenA, tokenB])
        #expect((seen[0].sequence ?? 0) < (seen[1].sequence ?? 0))
        #expect(harness.server.device("alice")?.pushToken == tokenB)
    }

    @Test func permissionWithdrawnSendsNullPushToken() async {
        let harness = Harness.signedIn()
        await harness.client.flush()
        harness.client.authorizationChanged(.denied)
        await harness.client.flush()

        let last = harness.server.seen.last
        #expect(harness.server.seen.count == 2)
        #expect(last?.body["pushToken"] is NSNull)
        #expect(harness.server.device("alice") != nil, "the device stays")
        #expect(harness.server.device("alice")?.pushToken == nil)
    }

    @Test func aTokenCallbackAfterADenialDoesNotUndoIt() async {
        let harness = Harness.signedIn()
        await harness.client.flush()
        harness.client.authorizationChanged(.denied)
        harness.client.pushTokenReceived(PushToken(value: tokenA))
        await harness.client.flush()
        #expect(harness.server.device("alice")?.pushToken == nil, "the callback that came last decided")

        harness.client.authorizationChanged(.provisional)
        await harness.client.flush()
        #expect(harness.server.device("alice")?.pushToken == tokenA, "a permission granted again brings the token back")
        harness.client.authorizationChanged(.authorized)
        await harness.client.flush()
        #expect(harness.server.seen.count == 3, "provisional to authorized changes nothing the server holds")
    }

    @Test func unknownPushTokenLeavesTheServersTokenAlone() async {
        let harness = Harness()
        harness.client.signedIn(userId: "alice", credentials: credentials("alice"))
        await harness.client.flush()
        #expect(harness.server.seen.count == 1)
        #expect(harness.server.seen[0].body.keys.contains("pushToken") == false)
    }

    @Test func callsFromSynchronousCodeApplyInCallOrder() async {
        let harness = Harness.signedIn()
        for round in 0..<50 {
            harness.client.pushTokenReceived(PushToken(value: round.isMultiple(of: 2) ? tokenB : tokenC))
        }
        harness.client.signedOut()
        harness.client.signedIn(userId: "alice", credentials: credentials("alice"))
        #expect(harness.client.desiredState.pushToken == PushToken(value: tokenC))
        await harness.client.flush()

        #expect(harness.server.seen.map(\.method) == ["DELETE", "POST"], "the sign-out's delete, then the new session")
        #expect(harness.server.device("alice")?.pushToken == tokenC)
    }

    @Test func unchangedStateIsSentAgainAfterTheRefreshInterval() async {
        let harness = Harness.signedIn()
        await harness.client.flush()
        await harness.advance(seconds: 23 * 3600)
        harness.client.enteredForeground()
        await harness.client.flush()
        #expect(harness.server.seen.count == 1, "still fresh after 23 h")

        harness.clock.advance(by: .seconds(3601))
        await eventually("the refresh timer to re-register") { harness.server.answered.count == 2 }
        let seen = harness.server.seen
        #expect(seen.last?.body["pushToken"] as? String == tokenA)
        #expect((seen.first?.sequence ?? 0) < (seen.last?.sequence ?? 0))
    }

    @Test func activityTokensRegisterRotateAndDelete() async {
        let harness = Harness.signedIn()
        harness.client.pushToStartTokenReceived(PushToken(value: tokenC), attributesType: "MatchAttributes")
        harness.client.activityTokenReceived(activityId: "match/7", token: PushToken(value: tokenA))
        await harness.client.flush()
        #expect(harness.server.seen.map(\.path) == [
            "/v1/devices", "/v1/devices/push-to-start-token", "/v1/activities/match%2F7/activity-token",
        ])
        #expect(harness.server.device("alice")?.activities == ["match/7": tokenA])
        #expect(harness.server.device("alice")?.pushToStartToken == tokenC)

        harness.client.activityTokenReceived(activityId: "match/7", token: PushToken(value: tokenB))
        await harness.client.flush()
        #expect(harness.server.device("alice")?.activities == ["match/7": tokenB])

        harness.client.activityEnded(activityId: "match/7")
        harness.client.pushToStartTokenReceived(nil, attributesType: "MatchAttributes")
        await harness.client.flush()
        #expect(harness.server.seen.suffix(2).map(\.method) == ["DELETE", "DELETE"])
        #expect(harness.server.device("alice")?.activities == [:])
        #expect(harness.server.device("alice")?.pushToStartToken == nil)
        #expect(harness.server.seen.count == 6)
    }
}
