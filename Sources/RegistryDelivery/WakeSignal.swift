import Synchronization

/// Wakes the claim loop early: an accepted notification, a settled
/// delivery that freed room, a stop. One waiter at a time (the loop); a
/// signal with nobody waiting is kept for the next wait.
final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func signal() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard let waiter = s.waiter else {
                s.pending = true
                return nil
            }
            s.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns when signalled (clearing it) or after about `limit`. A timer
    /// left from an earlier wait may end a later one early: the loop then
    /// just looks for work once more.
    func wait(upTo limit: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let signalled = state.withLock { s -> Bool in
                if s.pending {
                    s.pending = false
                    return true
                }
                s.waiter = continuation
                return false
            }
            if signalled {
                continuation.resume()
                return
            }
            Task { [self] in
                try? await Task.sleep(for: limit)
                let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
                    defer { s.waiter = nil }
                    return s.waiter
                }
                waiter?.resume()
            }
        }
    }
}
