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
    private let interval: Duration
    private let report: @Sendable (Result<SweepCounts, any Error>, _ seconds: Double) -> Void
    /// Set by `stop`; the running sweep's task, cancelled by `stop`.
    private let control = Mutex<(stopping: Bool, sweep: Task<Void, Never>?)>((false, nil))
    private let wakeup = NSCondition()
    private let finished = DispatchSemaphore(value: 0)
    private let started = Mutex(false)

    /// - Parameter interval: from the end of one sweep to the start of the next (at least a millisecond).
    public init(store: any RegistryStore, interval: Duration,
                report: @escaping @Sendable (Result<SweepCounts, any Error>, _ seconds: Double) -> Void) {
        self.store = store
        self.interval = max(.milliseconds(1), interval)
        self.report = report
    }

    public var name: String { "registry-sweeper" }

    /// Starts the thread; the first sweep comes one interval later. Idempotent.
    public func start() {
        let first = started.withLock { s -> Bool in
            defer { s = true }
            return !s
        }
        guard first else { return }
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    /// Idempotent; safe before `start`.
    public func stop() {
        let wasRunning = started.withLock { $0 }
        let first = control.withLock { c -> Bool in
            defer { c.stopping = true }
            c.sweep?.cancel()
            return !c.stopping
        }
        wakeup.lock()
        wakeup.broadcast()
        wakeup.unlock()
        if wasRunning && first { finished.wait() }
    }

    private func run() {
        while waitInterval() {
            let begin = ContinuousClock.now
            let result = Blocking.result(started: { task in
                control.withLock { c in
                    c.sweep = task
                    if c.stopping { task.cancel() }
                }
            }) { [store] in try await store.sweep(dryRun: false) }
            control.withLock { $0.sweep = nil }
            report(result, (ContinuousClock.now - begin).inSeconds)
        }
        finished.signal()
    }

    /// Sleeps one interval; `false` when stopped meanwhile.
    private func waitInterval() -> Bool {
        let deadline = Date().addingTimeInterval(interval / .seconds(1))
        wakeup.lock()
        defer { wakeup.unlock() }
        while !control.withLock({ $0.stopping }) {
            if !wakeup.wait(until: deadline) { return !control.withLock { $0.stopping } }
        }
        return false
    }
}
