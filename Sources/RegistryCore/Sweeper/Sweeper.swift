import Codecs
import Foundation
import Lifecycle
import Synchronization

/// The background thread that sweeps expired records every interval.
///
/// It only decides *when*: the store's `sweep` reads the expiry index and
/// deletes in bounded transactions through the writer, so a sweep never
/// holds the write lock for long. `stop()` wakes it, cancels a sweep in
/// progress (it ends between two bounded steps, so shutdown never waits for
/// a whole backlog) and waits for the thread.
public final class Sweeper: Service {
    private let store: any RegistryStore
    private let report: @Sendable (Result<SweepCounts, any Error>, _ seconds: Double) -> Void
    private let running = RunningSweep()
    private let thread: PeriodicThread

    /// - Parameter interval: from the end of one sweep to the start of the next (at least a millisecond).
    public init(store: any RegistryStore, interval: Duration,
                report: @escaping @Sendable (Result<SweepCounts, any Error>, _ seconds: Double) -> Void) {
        self.store = store
        self.report = report
        let running = self.running
        thread = PeriodicThread(name: "registry-sweeper", interval: interval, interrupt: { running.cancel() })
    }

    public var name: String { thread.name }

    /// Starts the thread; the first sweep comes one interval later. Idempotent.
    public func start() {
        thread.start { [store, report, running] in
            let begin = ContinuousClock.now
            let result = Blocking.result(started: { running.began($0) }) { try await store.sweep(dryRun: false) }
            running.ended()
            report(result, (ContinuousClock.now - begin).inSeconds)
        }
    }

    /// Idempotent; safe before `start`.
    public func stop() { thread.stop() }
}

/// The task of the sweep in progress, so `stop` can cancel it (it ends
/// between two bounded steps); once cancelled, a sweep starting is too.
private final class RunningSweep: Sendable {
    private let state = Mutex<(cancelled: Bool, task: Task<Void, Never>?)>((false, nil))

    func began(_ task: Task<Void, Never>) {
        state.withLock { state in
            state.task = task
            if state.cancelled { task.cancel() }
        }
    }

    func ended() { state.withLock { $0.task = nil } }

    func cancel() {
        state.withLock { state in
            state.cancelled = true
            state.task?.cancel()
        }
    }
}
