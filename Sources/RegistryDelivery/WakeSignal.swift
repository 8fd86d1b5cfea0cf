import Synchronization

/// Wakes the claim loop early: an accepted notification, a settled
/// delivery that freed room, a stop. Polled every 2 ms while waiting, which
/// costs nothing next to a claim and needs no continuation bookkeeping.
final class WakeSignal: Sendable {
    private let pending = Atomic<Bool>(false)

    func signal() { pending.store(true, ordering: .releasing) }

    /// Returns when signalled (clearing it) or after `limit`.
    func wait(upTo limit: Duration) async {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if pending.exchange(false, ordering: .acquiringAndReleasing) { return }
            try? await Task.sleep(for: .milliseconds(2))
        }
    }
}
