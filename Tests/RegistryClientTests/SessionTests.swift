import Foundation
@testable import RegistryClient
import Synchronization
import Testing

/// Sessions: sign-out deletes with a sequence and abandons the old session's
/// work; account switches; requests in flight when the state moves on;
/// sequences that survive a restart.
@Suite struct SessionTests {
    @Test func accountSwitchDeletesTheOldUserThenRegistersTheNew() async {
        let harness = Harness.signedIn("alice")
        await harness.client.flush()
        harness.client.signedOut()
        harness.client.signedIn(userId: "bob", credentials: credentials("bob"))
        await harness.client.flush()

        let seen = harness.server.seen
        #expect(seen.map { "\($0.method) \($0.user)" } == ["POST alice", "DELETE alice", "POST bob"])
        #expect(seen[1].sequence != nil, "the sign-out delete is sequenced")
        #expect(harness.server.device("alice") == nil)
        #expect(harness.server.device("bob")?.pushToken == tokenA)
    }

    @Test func signInAsAnotherUserIsAnAccountSwitch() async {
        let harness = Harness.signedIn("alice")
        await harness.client.flush()
        harness.client.signedIn(userId: "bob", credentials: credentials("bob"))
        await harness.client.flush()
        #expect(harness.server.seen.map { "\($0.method) \($0.user)" } == ["POST alice", "DELETE alice", "POST bob"])
    }

    @Test func signOutBeatsARegisterStillInFlight() async {
        let harness = Harness.signedIn("alice")
        harness.server.holdNextRequest()
        let firstFlush = Task { await harness.client.flush() }
        await eventually("the register to be on the wire") { harness.server.isHolding }

        harness.client.signedOut()
        await harness.client.flush()
        #expect(harness.server.answered.map(\.method) == ["DELETE"], "the delete did not wait for the register")

        harness.server.release()
        await eventually("the late register to be answered") { harness.server.answered.count == 2 }
        await firstFlush.value
        await harness.client.flush()

        let seen = harness.server.seen
        #expect(seen.count == 2, "the refused register is not retried for a session that ended")
        #expect(seen[0].status == 409, "the late register is refused by its older sequence")
        #expect((seen[0].sequence ?? 0) < (seen[1].sequence ?? 0))
        #expect(harness.server.device("alice") == nil)

        harness.client.signedIn(userId: "bob", credentials: credentials("bob"))
        await harness.client.flush()
        #expect(harness.server.device("bob")?.pushToken == tokenA)
        #expect(harness.server.device("alice") == nil)
    }

    @Test func tokenRotationWhileARegisterIsInFlightIsSentNext() async {
        let harness = Harness.signedIn("alice")
        harness.server.holdNextRequest()
        let firstFlush = Task { await harness.client.flush() }
        await eventually("the register to be on the wire") { harness.server.isHolding }

        harness.client.pushTokenReceived(PushToken(value: tokenB))
        try? await Task.sleep(for: .milliseconds(20))
        #expect(harness.server.seen.count == 1, "single flight: nothing else goes while one is on the wire")
        harness.server.release()
        await firstFlush.value
        await harness.client.flush()

        #expect(harness.server.seen.map { $0.body["pushToken"] as? String } == [tokenA, tokenB])
        #expect(harness.server.device("alice")?.pushToken == tokenB)
    }

    @Test func newSessionWaitsForTheOldSessionsDelete() async {
        let harness = Harness.signedIn("alice")
        await harness.client.flush()
        harness.server.holdNextRequest()
        harness.client.signedOut()
        harness.client.signedIn(userId: "bob", credentials: credentials("bob"))
        let flush = Task { await harness.client.flush() }
        await eventually("the delete to be on the wire") { harness.server.isHolding }
        try? await Task.sleep(for: .milliseconds(20))
        #expect(harness.server.seen.count == 2, "bob's register waits for alice's delete")
        harness.server.release()
        await flush.value
        #expect(harness.server.seen.map(\.user) == ["alice", "alice", "bob"])
        #expect(harness.server.device("bob") != nil)
    }

    @Test func sequencesSurviveARestartAndAClockThatStepsBack() async throws {
        let store = InMemorySequenceStore()
        let first = Harness(store: store, clock: ManualClock(date: Date(timeIntervalSince1970: 2_000_000)))
        first.client.signedIn(userId: "alice", credentials: credentials("alice"))
        first.client.pushTokenReceived(PushToken(value: tokenA))
        await first.client.flush()
        await first.client.close()
        let firstSequence = try #require(first.server.seen.last?.sequence)
        #expect(store.load() == firstSequence)

        // The next launch's wall clock is a thousand seconds earlier.
        let second = Harness(server: first.server, store: store,
                             clock: ManualClock(date: Date(timeIntervalSince1970: 1_000_000)))
        second.client.signedIn(userId: "alice", credentials: credentials("alice"))
        second.client.pushTokenReceived(PushToken(value: tokenB))
        await second.client.flush()
        let secondSequence = try #require(second.server.seen.last?.sequence)
        #expect(secondSequence > firstSequence)
        #expect(second.server.seen.last?.status == 200, "a fresh process sends once, and is not refused")
        #expect(second.server.device("alice")?.pushToken == tokenB)

        // A reinstall loses the store; the wall clock keeps sequences rising.
        let third = Harness(server: first.server)
        third.client.signedIn(userId: "alice", credentials: credentials("alice"))
        third.client.pushTokenReceived(PushToken(value: tokenC))
        await third.client.flush()
        #expect((third.server.seen.last?.sequence ?? 0) > secondSequence)
        #expect(third.server.device("alice")?.pushToken == tokenC)
    }
}

/// A sign-out whose credential can no longer be had: the app's
/// `freshJWT()` throws once its user is logged out.
@Suite struct EndedSessionCredentialTests {
    @Test func aThrowingCredentialAfterSignOutDoesNotBlockTheNextUser() async {
        let harness = Harness()
        let loggedOut = Mutex(false)
        harness.client.signedIn(userId: "alice") {
            if loggedOut.withLock({ $0 }) { throw URLError(.userAuthenticationRequired) }
            return "token-alice"
        }
        harness.client.pushTokenReceived(PushToken(value: tokenA))
        await harness.client.flush()
        loggedOut.withLock { $0 = true }
        harness.client.signedOut()
        harness.client.signedIn(userId: "bob", credentials: credentials("bob"))
        await harness.client.flush()
        await harness.advance(seconds: 60)
        #expect(harness.server.device("bob")?.pushToken == tokenA, "bob waits for alice's delete for ever")
        #expect(harness.server.device("alice") == nil, "sent with the credential alice had when she signed out")
    }
}

/// A sign-out outlives the process that took it.
@Suite struct DurableSignOutTests {
    @Test func aSignOutNotYetSentIsSentByTheNextLaunch() async throws {
        let server = FakeRegistry()
        let first = Harness(server: server)
        first.client.signedIn(userId: "alice", credentials: credentials("alice"))
        first.client.pushTokenReceived(PushToken(value: tokenA))
        await first.client.flush()
        server.setOffline(true)
        first.client.signedOut()
        await first.client.flush()
        await first.client.close()
        #expect(server.device("alice") != nil)

        server.setOffline(false)
        #expect(first.signOuts.load().map(\.userId) == ["alice"], "saved before signedOut() returned")
        let second = Harness(server: server, store: first.store, signOuts: first.signOuts)
        await second.client.flush()
        #expect(server.device("alice") == nil, "the next launch sends the delete")
        #expect(second.signOuts.load().isEmpty)
    }

    @Test func theFileStoreReplacesItsFileAndReadsACorruptOneAsEmpty() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sign-outs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = FileSignOutStore(url: directory.appendingPathComponent("RegistryClient/pending-sign-outs.json"))
        #expect(store.load().isEmpty)
        let signOut = PendingSignOut(userId: "alice", deviceId: "phone-1", appId: "com.example", sequence: 7,
                                     credential: "jwt", signedOutAt: Date(timeIntervalSince1970: 1_000))
        try store.save([signOut])
        #expect(FileSignOutStore(url: store.url).load() == [signOut])
        try Data("{not json".utf8).write(to: store.url)
        #expect(store.load().isEmpty)
    }

    @Test func theNextUserWaitsForAnUnansweredDeleteOnlyForTheGrace() async {
        let harness = Harness.signedIn("alice")
        await harness.client.flush()
        harness.server.script { $0.method == "DELETE" ? RegistryResponse(status: 503) : nil }
        harness.client.signedOut()
        harness.client.signedIn(userId: "bob", credentials: credentials("bob"))
        await harness.client.flush()
        #expect(harness.server.device("bob") == nil, "bob waits while alice's delete is young")
        await harness.advance(seconds: 10.5)
        #expect(harness.server.device("bob")?.pushToken == tokenA)
        let deletes = harness.server.seen.filter { $0.method == "DELETE" }
        #expect(deletes.count >= 2 && Set(deletes.map(\.sequence)).count == 1, "a retry reuses the sign-out's sequence")
        harness.server.script(nil)
        await harness.advance(seconds: 600)
        #expect(harness.server.device("alice") == nil)
        #expect(harness.signOuts.load().isEmpty)
    }

    @Test func signOutWithATimeoutAsksForTheCredentialBeforeTheAppClearsIt() async {
        let harness = Harness()
        let loggedOut = Mutex(false)
        harness.client.signedIn(userId: "alice") {
            if loggedOut.withLock({ $0 }) { throw URLError(.userAuthenticationRequired) }
            return "token-alice"
        }
        harness.server.storeSequence(1, user: "alice")
        #expect(await harness.client.signOut(timeout: .seconds(5)) == .delivered)
        loggedOut.withLock { $0 = true }
        #expect(harness.server.device("alice") == nil)
        #expect(await harness.client.signOut(timeout: .seconds(5)) == .notSignedIn)
    }

    @Test func aDeleteWithNoCredentialGivesUpAtOnce() async {
        let harness = Harness()
        harness.client.signedIn(userId: "alice") { throw URLError(.userAuthenticationRequired) }
        #expect(await harness.client.signOut(timeout: .seconds(5)) == .gaveUp)
        #expect(harness.server.seen.isEmpty)
        #expect(harness.signOuts.load().isEmpty)
    }

    @Test func aCredentialForAnotherUserIsNotUsedForTheSignOut() {
        func jwt(_ subject: String) -> String {
            let claims = Data(#"{"sub":"\#(subject)","exp":1}"#.utf8).base64EncodedString()
                .replacingOccurrences(of: "=", with: "")
            return "eyJhbGciOiJFUzI1NiJ9.\(claims).c2ln"
        }
        #expect(BearerSubject.allows(jwt("alice"), for: "alice"))
        #expect(!BearerSubject.allows(jwt("bob"), for: "alice"))
        #expect(BearerSubject.allows("opaque-token", for: "alice"), "an opaque credential cannot be checked")
    }

    @Test func aSignOutLeftByAnotherPhoneIsNotReplayed() async {
        let other = PendingSignOut(userId: "alice", deviceId: "phone-2", appId: nil, sequence: 5, credential: "token-alice",
                                   signedOutAt: Date())
        let harness = Harness(signOuts: InMemorySignOutStore([other]))
        await harness.client.flush()
        #expect(harness.server.seen.isEmpty, "a restored file names the old phone's id")
    }
}

/// Live Activities belong to the user who started them.
@Suite struct ActivityOwnershipTests {
    @Test func theOldUsersActivitiesAreNotRegisteredForTheNextUser() async {
        let harness = Harness.signedIn("alice")
        harness.client.activityTokenReceived(activityId: "match-1", token: PushToken(value: tokenC))
        await harness.client.flush()
        harness.client.signedOut()
        harness.client.signedIn(userId: "bob", credentials: credentials("bob"))
        await harness.client.flush()
        harness.client.activityTokenReceived(activityId: "match-1", token: PushToken(value: tokenB))
        await harness.client.flush()
        #expect(harness.server.device("bob")?.activities == [:], "alice's activity followed her into bob's session")
    }

    @Test func pushToStartTokensOfTwoAttributesTypesDoNotOverwriteEachOther() async {
        let harness = Harness.signedIn("alice")
        harness.client.pushToStartTokenReceived(PushToken(value: tokenB), attributesType: "MatchAttributes")
        harness.client.pushToStartTokenReceived(PushToken(value: tokenC), attributesType: "DeliveryAttributes")
        harness.client.pushToStartTokenReceived(PushToken(value: tokenB), attributesType: "MatchAttributes")
        await harness.client.flush()
        #expect(harness.server.device("alice")?.pushToStartToken == tokenC, "the first type by name holds the slot")
        harness.client.pushToStartTokenReceived(nil, attributesType: "DeliveryAttributes")
        await harness.client.flush()
        #expect(harness.server.device("alice")?.pushToStartToken == tokenB, "the other type's token stays known")
    }
}
