import Foundation

/// Keeps this install's registration on the registry right.
///
/// The app reports facts as they happen: a token arrived, the app came to
/// the foreground, a user signed in or out, a Live Activity started or ended.
/// It never chooses a request. Each fact updates the desired state in call
/// order (so calls from synchronous code cannot overtake one another) and
/// wakes the queue, which sends the fewest requests that get the server
/// there. Reporting a fact twice costs nothing, so wire triggers liberally.
///
/// Every method but `flush()` and `close()` is synchronous and safe from any
/// thread. One client per install; create it at launch and keep it.
public final class RegistryClient: Sendable {
    private let inbox: Inbox
    private let queue: RegistrationQueue
    private let sink: EventSink

    /// What the client does, as it happens (see `RegistryEvent`). One
    /// consumer; the newest 100 events are kept while nobody reads.
    public let events: AsyncStream<RegistryEvent>

    /// - Parameters:
    ///   - deviceId: `identifierForVendor`, not a stored UUID: a stored one
    ///     travels with an iCloud restore onto a second phone, which would
    ///     then overwrite the first phone's registration.
    ///   - appId: the bundle identifier, when several apps share a registry
    ///     (API v1.1); nil for a v1 server.
    ///   - transport: how requests travel; `URLSessionTransport` in an app.
    ///   - sequenceStore: keeps sequences monotonic across launches.
    ///   - signOutStore: keeps sign-outs not yet answered across launches;
    ///     those an earlier launch left are sent by this one. In an app,
    ///     `try FileSignOutStore.applicationSupport()`.
    public init(deviceId: String, appId: String? = nil, osVersion: String? = nil, appVersion: String? = nil,
                transport: any RegistryTransport, sequenceStore: any SequenceStore = UserDefaultsSequenceStore(),
                signOutStore: any SignOutStore, clock: any RegistryClock = SystemRegistryClock(),
                configuration: Configuration = Configuration()) {
        inbox = Inbox(DesiredState(deviceId: deviceId, appId: appId, osVersion: osVersion, appVersion: appVersion),
                      clock: clock, sequenceStore: sequenceStore, signOutStore: signOutStore)
        let (events, continuation) = AsyncStream.makeStream(of: RegistryEvent.self, bufferingPolicy: .bufferingNewest(100))
        self.events = events
        sink = EventSink(continuation: continuation)
        queue = RegistrationQueue(inbox: inbox, transport: transport, clock: clock, configuration: configuration,
                                  events: sink)
        wake()
    }

    /// The desired state as the facts reported so far leave it.
    public var desiredState: DesiredState { inbox.state }

    /// A user is signed in: at launch with a restored session, or after a
    /// login. `credentials` returns a current JWT for that user; it is asked
    /// before every request, and after sign-out once more for the delete.
    /// Another user than the current one is an account switch. To start a new
    /// session of the same user, call `signedOut()` first.
    public func signedIn(userId: String, credentials: @escaping @Sendable () async throws -> String) {
        if let failure = inbox.signIn(userId: userId, credentials: credentials) {
            sink.emit(.signOutNotSaved(error: String(describing: failure)))
        }
        wake()
    }

    /// The user signed out (or was signed out): the session's registration is
    /// deleted and nothing more is sent for it, including its running Live
    /// Activities, which are not carried into the next session. The delete is saved to the
    /// `SignOutStore` before this returns, so it is sent even if the app dies
    /// first; the next launch sends it.
    public func signedOut() {
        if let failure = inbox.signOut().failure { sink.emit(.signOutNotSaved(error: String(describing: failure))) }
        wake()
    }

    /// A sign-out for apps that can wait before clearing their auth: the
    /// session's credential provider is asked now, while it still answers
    /// for this user, and the call returns once the server answered the
    /// delete or `timeout` passed (the delete then stays queued and saved).
    @discardableResult
    public func signOut(timeout: Duration) async -> SignOutResult {
        guard let session = inbox.state.session else { return .notSignedIn }
        let credential = try? await session.credentials()
        let usable = credential.flatMap { BearerSubject.allows($0, for: session.userId) ? $0 : nil }
        let (sequence, failure) = inbox.signOut(credential: usable, epoch: session.epoch)
        if let failure { sink.emit(.signOutNotSaved(error: String(describing: failure))) }
        guard let sequence else { return .notSignedIn }
        wake()
        return await queue.waitForSignOut(sequence, timeout: timeout)
    }

    /// The APNs (or FCM) device token, from every
    /// `didRegisterForRemoteNotificationsWithDeviceToken`. It is sent only
    /// while notifications are not denied (see `authorizationChanged(_:)`).
    public func pushTokenReceived(_ token: PushToken) {
        change { $0.pushToken = token }
    }

    /// The notification authorization, read from `UNUserNotificationCenter`
    /// settings at launch, after a permission prompt and on every foreground
    /// (the user may have changed it in Settings). `denied` removes the push
    /// token from the server (`pushToken: null`, the device stays); any
    /// other status brings the last token back, so a permission granted
    /// again needs nothing more.
    public func authorizationChanged(_ authorization: PushAuthorization) {
        change { $0.authorization = authorization }
    }

    /// A token from `Activity<Attributes>.pushToStartTokenUpdates`; nil when
    /// the system withdrew it. `attributesType` names the sequence
    /// (`String(describing: Attributes.self)`), so each type keeps its own.
    public func pushToStartTokenReceived(_ token: PushToken?, attributesType: String) {
        change { $0.pushToStartTokens[attributesType] = token }
    }

    /// An update token from one activity's `pushTokenUpdates`, first or
    /// rotated. `activityId` is the activity's subject (a match id, say).
    /// An activity of a session that has since signed out stays out: its
    /// registration ended with that session.
    public func activityTokenReceived(activityId: String, token: PushToken) {
        inbox.activityToken(token, for: activityId)
        wake()
    }

    /// The activity ended or was dismissed: its token is deleted.
    public func activityEnded(activityId: String) {
        change { $0.activities[activityId] = nil }
    }

    /// The app version or OS version changed (they travel with the device).
    public func versionsChanged(osVersion: String?, appVersion: String?) {
        change {
            $0.osVersion = osVersion
            $0.appVersion = appVersion
        }
    }

    /// The app came to the foreground: a trigger, not a change. The queue
    /// looks again, which re-sends what has outlived the refresh interval and
    /// retries what a change made sendable.
    public func enteredForeground() {
        wake()
    }

    /// Sends what is pending now (skipping the coalescing window) and returns
    /// once nothing is in flight. Await it from a background task before the
    /// app suspends, so a sign-out's delete is not left waiting for the next
    /// launch. It does not wait out a backoff.
    public func flush() async {
        await queue.flush()
    }

    /// Stops the client: requests in flight are cancelled, nothing more is
    /// sent. For tests and for an app that tears its services down.
    public func close() async {
        await queue.close()
        sink.continuation.finish()
    }

    private func change(_ mutate: (inout DesiredState) -> Void) {
        inbox.update(mutate)
        wake()
    }

    /// The task carries no data, so wake-ups arriving in any order are the
    /// same: the queue reads the inbox, which holds the facts in call order.
    private func wake() {
        Task { [queue] in await queue.wake() }
    }
}
