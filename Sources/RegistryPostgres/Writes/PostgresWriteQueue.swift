import RegistryCore
import Synchronization

/// Admits this node's writes: at most `maxPending` at once, and a user's
/// writes one at a time, waiting here for their turn rather than holding a
/// pool connection while they wait for their user's advisory lock. So one
/// user with many writes in flight occupies one connection at a time and
/// every other user's writes go by; past either bound a write is refused
/// with `RegistryError.unavailable` (503 with Retry-After) instead of the
/// queue growing without bound.
///
/// The user lock in the database still orders a user's writes across
/// nodes; this orders them within the node, in arrival order.
final class PostgresWriteQueue: Sendable {
    private struct State {
        var pending = 0
        /// Users with a write running; each with the writes waiting behind it.
        var users: [String: [CheckedContinuation<String?, Never>]] = [:]
    }

    let maxPending: Int
    let maxPerUser: Int
    private let state = Mutex(State())

    init(maxPending: Int, maxPerUser: Int) {
        self.maxPending = max(1, maxPending)
        self.maxPerUser = max(1, maxPerUser)
    }

    /// Waits for the write's turn: the node has room, and no other write of
    /// `user` (when given) runs on this node. Pair with `leave(user)`.
    func enter(_ user: String?) async throws(RegistryError) {
        // Most writes run at once; the continuation is made only to wait.
        switch state.withLock({ admit(user, &$0, waiting: nil) }) {
        case .run: return
        case .refuse(let reason): throw .unavailable(reason: "overloaded: \(reason)")
        case .wait: break
        }
        let refusal = await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            // Decided again with the continuation in hand: the running write may have left meanwhile.
            switch state.withLock({ admit(user, &$0, waiting: continuation) }) {
            case .run: continuation.resume(returning: nil)
            case .refuse(let reason): continuation.resume(returning: reason)
            case .wait: break
            }
        }
        if let refusal { throw .unavailable(reason: "overloaded: \(refusal)") }
    }

    private enum Admission { case run, wait, refuse(String) }

    /// Admits a write (counted in `pending`), or queues `waiting` behind the
    /// user's running write, or refuses. `.wait` with no continuation
    /// changes nothing: the caller makes one and asks again.
    private func admit(_ user: String?, _ state: inout State,
                       waiting continuation: CheckedContinuation<String?, Never>?) -> Admission {
        guard state.pending < maxPending else { return .refuse("this node holds its limit of \(maxPending) pending writes") }
        guard let user else {
            state.pending += 1
            return .run
        }
        guard let waiting = state.users[user] else {
            state.users[user] = []
            state.pending += 1
            return .run
        }
        guard waiting.count < maxPerUser else { return .refuse("one user has \(maxPerUser) writes waiting on this node") }
        guard let continuation else { return .wait }
        state.users[user]!.append(continuation)
        state.pending += 1
        return .wait
    }

    /// Ends a write admitted by `enter(user)`: the user's next write, if
    /// one waits, runs.
    func leave(_ user: String?) {
        let next = state.withLock { state -> CheckedContinuation<String?, Never>? in
            state.pending -= 1
            guard let user, var waiting = state.users[user] else { return nil }
            guard !waiting.isEmpty else {
                state.users[user] = nil
                return nil
            }
            let next = waiting.removeFirst()
            state.users[user] = waiting
            return next
        }
        next?.resume(returning: nil)
    }

    /// Writes admitted and not yet left (running or waiting).
    var pending: Int { state.withLock { $0.pending } }
}
