import RegistryCore
import Synchronization

/// Writes settlements in batches: whoever adds to an idle batcher writes
/// everything that gathers meanwhile, one `DeliveryStore.settle` per batch
/// (on PostgreSQL one transaction for many deliveries instead of one each).
///
/// A batch the store refuses is tried again, up to a second apart, until
/// the store takes it: a PostgreSQL failover takes 5–15 s, and an answer
/// dropped meanwhile would leave a delivery the provider answered to become
/// `unknown` (and a 410's token removal lost). Settling twice is harmless:
/// the store ignores a settlement whose claim is no longer held. Only once
/// the sender stops does a refused batch get one try: its deliveries stay
/// `sending` and become `unknown` when abandoned, never sent twice.
final class SettlementBatcher: Sendable {
    private struct State {
        var pending: [DeliverySettlement] = []
        var writing = false
    }

    private let state = Mutex(State())
    private let stopped = Atomic<Bool>(false)
    private let store: any DeliveryStore
    private let observer: any DeliveryObserver
    static let maxBatch = 250

    init(store: any DeliveryStore, observer: any DeliveryObserver) {
        self.store = store
        self.observer = observer
    }

    func add(_ settlement: DeliverySettlement) async {
        let writer = state.withLock { s in
            s.pending.append(settlement)
            if s.writing { return false }
            s.writing = true
            return true
        }
        if writer { await write() }
    }

    /// From now on a batch the store refuses is given up after one try (the sender is stopping).
    func stopRetrying() { stopped.store(true, ordering: .relaxed) }

    /// Writes what is pending (the sender's stop).
    func flush() async {
        let writer = state.withLock { s in
            if s.writing || s.pending.isEmpty { return false }
            s.writing = true
            return true
        }
        if writer { await write() }
    }

    private func write() async {
        var failures = 0
        while true {
            let batch: [DeliverySettlement] = state.withLock { s in
                if s.pending.isEmpty {
                    s.writing = false
                    return []
                }
                let batch = Array(s.pending.prefix(Self.maxBatch))
                s.pending.removeFirst(batch.count)
                return batch
            }
            if batch.isEmpty { return }
            do {
                try await store.settle(batch)
                failures = 0
            } catch {
                failures += 1
                if stopped.load(ordering: .relaxed) {
                    observer.senderError("settle \(batch.count) deliveries (given up: the sender is stopping; they become unknown when abandoned)", error)
                    continue
                }
                observer.senderError("settle \(batch.count) deliveries (try \(failures), trying again)", error)
                state.withLock { s in s.pending.insert(contentsOf: batch, at: 0) }
                try? await Task.sleep(for: .milliseconds(min(200 * failures, 1_000)))
            }
        }
    }
}
