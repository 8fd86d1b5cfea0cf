import Foundation

/// The desired state as the app's facts leave it, behind a lock.
///
/// This is the ordered entry point for synchronous callers. Hopping onto the
/// queue actor from synchronous code takes an unstructured task, and two such
/// tasks can arrive reversed, leaving the queue on the older state. Here each
/// fact is applied under the lock in call order, and the queue reads the
/// latest state whenever it runs, so the tasks that wake it carry no data
/// and their order cannot matter.
///
/// Sessions ended here are kept in `retired` until the queue takes them: a
/// sign-out followed at once by a sign-in must still delete the first
/// session's registration even if the queue never saw that session.
///
/// An `NSLock` rather than `Synchronization.Mutex`, which needs iOS 18; the
/// lock guards every access to `contents`, hence `@unchecked Sendable`.
final class Inbox: @unchecked Sendable {
    struct Contents: Sendable {
        var state: DesiredState
        var version: UInt64 = 0
        var retired: [RetiredSession] = []
        var lastEpoch: UInt64 = 0
    }

    private let lock = NSLock()
    private var contents: Contents

    init(_ state: DesiredState) {
        contents = Contents(state: state, lastEpoch: state.session?.epoch ?? 0)
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

    /// A sign-in. The same user again only replaces the credential provider
    /// (an app may report a restored session and then a fresh login); another
    /// user is an account switch, which retires the current session first.
    func signIn(userId: String, credentials: @escaping @Sendable () async throws -> String) {
        withLock {
            if let current = $0.state.session, current.userId == userId {
                $0.state.session = Session(userId: userId, epoch: current.epoch, credentials: credentials)
            } else {
                Self.retire(&$0)
                $0.lastEpoch += 1
                $0.state.session = Session(userId: userId, epoch: $0.lastEpoch, credentials: credentials)
            }
            $0.version += 1
        }
    }

    func signOut() {
        withLock {
            Self.retire(&$0)
            $0.version += 1
        }
    }

    /// The latest state, its version, and the sessions retired since the
    /// last call (handed over once).
    func take() -> (state: DesiredState, version: UInt64, retired: [RetiredSession]) {
        withLock { contents in
            defer { contents.retired = [] }
            return (contents.state, contents.version, contents.retired)
        }
    }

    private static func retire(_ contents: inout Contents) {
        guard let session = contents.state.session else { return }
        contents.retired.append(RetiredSession(session: session, deviceId: contents.state.deviceId,
                                               appId: contents.state.appId))
        contents.state.session = nil
    }
}

/// A session that ended: its registration must be deleted with its own
/// credential, for the device and app it was registered under.
struct RetiredSession: Sendable {
    let session: Session
    let deviceId: String
    let appId: String?
}
