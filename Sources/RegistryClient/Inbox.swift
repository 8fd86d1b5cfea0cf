import Foundation

/// The desired state as the app's facts leave it, the sequence counter, and
/// the pending sign-outs, behind one lock.
///
/// This is the ordered entry point for synchronous callers. Hopping onto the
/// queue actor from synchronous code takes an unstructured task, and two such
/// tasks can arrive reversed, leaving the queue on the older state. Here each
/// fact is applied under the lock in call order, and the queue reads the
/// latest state whenever it runs, so the tasks that wake it carry no data
/// and their order cannot matter.
///
/// A sign-out is stamped with its sequence and saved to the `SignOutStore`
/// under the lock, before `signedOut()` returns. The queue stamps its
/// registers here too, and only while their session is still the current
/// one, so no register of a session can be stamped after its sign-out.
///
/// An `NSLock` rather than `Synchronization.Mutex`, which needs iOS 18; the
/// lock guards every access to `contents`, hence `@unchecked Sendable`.
final class Inbox: @unchecked Sendable {
    struct Contents {
        var state: DesiredState
        var version: UInt64 = 0
        var sequences: SequenceGenerator
        var lastEpoch: UInt64 = 0
        /// The last credential the current session's provider returned.
        var lastCredential: (epoch: UInt64, bearer: String)?
        /// Every sign-out not yet answered: what the store holds.
        var pending: [PendingSignOut]
        /// Sign-outs not yet handed to the queue.
        var fresh: [RetiredSession]
        /// Activities of sessions that ended: a later token for one is the
        /// old user's and is not registered for the next.
        var endedActivities: Set<String> = []
    }

    private let lock = NSLock()
    private var contents: Contents
    private let clock: any RegistryClock
    private let signOutStore: any SignOutStore

    /// Loads the sign-outs an earlier launch left, for this device only: a
    /// file restored onto another phone names the old phone's id.
    init(_ state: DesiredState, clock: any RegistryClock, sequenceStore: any SequenceStore,
         signOutStore: any SignOutStore) {
        self.clock = clock
        self.signOutStore = signOutStore
        let pending = signOutStore.load().filter { $0.deviceId == state.deviceId }
        contents = Contents(state: state, sequences: SequenceGenerator(store: sequenceStore),
                            lastEpoch: state.session?.epoch ?? 0, pending: pending,
                            fresh: pending.map { RetiredSession(signOut: $0, credentials: nil) })
    }

    private func withLock<T>(_ body: (inout Contents) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&contents)
    }

    var state: DesiredState { withLock { $0.state } }

    /// Applies one fact to the desired state.
    func update(_ change: (inout DesiredState) -> Void) {
        withLock {
            change(&$0.state)
            $0.version += 1
        }
    }

    /// An activity's update token, unless the activity belonged to a
    /// session that has ended.
    func activityToken(_ token: PushToken, for activityId: String) {
        withLock {
            guard !$0.endedActivities.contains(activityId) else { return }
            $0.state.activities[activityId] = token
            $0.version += 1
        }
    }

    /// A sign-in. The same user again only replaces the credential provider
    /// (an app may report a restored session and then a fresh login); another
    /// user is an account switch, which retires the current session first.
    /// Returns an error from saving the retired session's sign-out, if any.
    func signIn(userId: String, credentials: @escaping @Sendable () async throws -> String) -> (any Error)? {
        withLock {
            var failure: (any Error)?
            if let current = $0.state.session, current.userId == userId {
                $0.state.session = Session(userId: userId, epoch: current.epoch, credentials: credentials)
            } else {
                failure = retire(&$0, credential: nil)
                $0.lastEpoch += 1
                $0.state.session = Session(userId: userId, epoch: $0.lastEpoch, credentials: credentials)
            }
            $0.version += 1
            return failure
        }
    }

    /// Ends the current session. `credential`, when given, was obtained from
    /// the session's provider just before; otherwise the last one it
    /// returned is kept, and the delete asks the provider once more.
    /// Returns the sign-out's sequence (nil: nobody was signed in) and an
    /// error from saving it, if any.
    func signOut(credential: String? = nil, epoch: UInt64? = nil) -> (sequence: UInt64?, failure: (any Error)?) {
        withLock {
            guard let session = $0.state.session else { return (nil, nil) }
            let given = session.epoch == epoch ? credential : nil
            let failure = retire(&$0, credential: given)
            $0.version += 1
            return ($0.pending.last?.sequence, failure)
        }
    }

    /// The latest state, its version, and the sign-outs taken since the last
    /// call (handed over once).
    func take() -> (state: DesiredState, version: UInt64, retired: [RetiredSession]) {
        withLock { contents in
            defer { contents.fresh = [] }
            return (contents.state, contents.version, contents.fresh)
        }
    }

    /// A sequence for a register of session `epoch`, or nil when that
    /// session has ended (its request must not be sent).
    func stamp(epoch: UInt64) -> UInt64? {
        withLock {
            guard $0.state.session?.epoch == epoch else { return nil }
            return $0.sequences.next(at: clock.date)
        }
    }

    /// After a 409: the server holds `sequence` for this device.
    func raise(past sequence: UInt64) {
        withLock { $0.sequences.raise(past: sequence) }
    }

    /// Remembers the credential session `epoch` obtained, for its sign-out.
    func remember(_ bearer: String, epoch: UInt64) {
        withLock {
            guard $0.state.session?.epoch == epoch else { return }
            $0.lastCredential = (epoch, bearer)
        }
    }

    /// The credential a sign-out's delete obtained: kept for its retries and
    /// for a later launch.
    func pin(_ bearer: String, signOut sequence: UInt64) -> (any Error)? {
        withLock {
            guard let index = $0.pending.firstIndex(where: { $0.sequence == sequence }),
                  $0.pending[index].credential != bearer else { return nil }
            $0.pending[index].credential = bearer
            return save($0.pending)
        }
    }

    /// The sign-out was answered (or given up): it is forgotten.
    func settle(signOut sequence: UInt64) -> (any Error)? {
        withLock {
            $0.pending.removeAll { $0.sequence == sequence }
            return save($0.pending)
        }
    }

    private func retire(_ contents: inout Contents, credential: String?) -> (any Error)? {
        guard let session = contents.state.session else { return nil }
        let cached = contents.lastCredential.flatMap { $0.epoch == session.epoch ? $0.bearer : nil }
        let signOut = PendingSignOut(userId: session.userId, deviceId: contents.state.deviceId,
                                     appId: contents.state.appId, sequence: contents.sequences.next(at: clock.date),
                                     credential: credential ?? cached, signedOutAt: clock.date)
        contents.pending.append(signOut)
        contents.fresh.append(RetiredSession(signOut: signOut, credentials: credential == nil ? session.credentials : nil))
        contents.state.session = nil
        contents.lastCredential = nil
        contents.endedActivities.formUnion(contents.state.activities.keys)
        contents.state.activities = [:]
        return save(contents.pending)
    }

    private func save(_ pending: [PendingSignOut]) -> (any Error)? {
        do {
            try signOutStore.save(pending)
            return nil
        } catch {
            return error
        }
    }
}

/// A session that ended: its registration must be deleted with its own
/// credential, for the device and app it was registered under.
struct RetiredSession: Sendable {
    var signOut: PendingSignOut
    /// The session's provider, asked once by the first attempt (a credential
    /// fresher than the kept one); nil for a sign-out replayed at launch.
    var credentials: (@Sendable () async throws -> String)?
}
