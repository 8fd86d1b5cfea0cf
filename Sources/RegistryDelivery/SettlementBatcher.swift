import RegistryCore
import Synchronization

/// Writes settlements in batches: whoever adds to an idle batcher writes
/// everything that gathers meanwhile, one `DeliveryStore.settle` per batch
/// (on PostgreSQL one transaction for many deliveries instead of one each).
/// A batch that fails is retried after a pause; the deliveries stay
/// `sending` meanwhile, and `unknown` if it never succeeds (the claim is
/// abandoned after two minutes): never sent twice.
final class SettlementBatcher: Sendable {
    private struct State {
        var pending: [DeliverySettlement] = []
        var writing = false
    }

    private let state = Mutex(State())
    private let store: any DeliveryStore
    private let observer: any DeliveryObserver
    static let maxBatch = 1000

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
                observer.senderError("settle \(batch.count) deliveries", error)
                if failures >= 5 { continue }
                state.withLock { s in s.pending.insert(contentsOf: batch, at: 0) }
                try? await Task.sleep(for: .milliseconds(200 * failures))
            }
        }
    }
}
