import Foundation
import Synchronization

/// A thread that runs `work` once per interval (from the end of one run to
/// the start of the next) until stopped: the one loop behind the sweeper,
/// the HTTP server's connection reaper and the stores' key watchers.
///
/// `stop()` wakes the thread at once (no run starts after it), calls
/// `interrupt` so a run in progress can end early, and waits for the thread.
public final class PeriodicThread: Service {
    public let name: String
    private let interval: Duration
    private let work: @Sendable () -> Void
    private let interrupt: @Sendable () -> Void
    private let stopping = Mutex(false)
    private let started = Mutex(false)
    private let wakeup = NSCondition()
    private let finished = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - interval: at least a millisecond; the first run comes one interval after `start`.
    ///   - interrupt: called by `stop` (from the stopping thread) while a run may be in progress.
    public init(name: String, interval: Duration, interrupt: @escaping @Sendable () -> Void = {},
                _ work: @escaping @Sendable () -> Void) {
        self.name = name
        self.interval = max(.milliseconds(1), interval)
        self.interrupt = interrupt
        self.work = work
    }

    /// Whether `stop` was called: a long run may check it between steps.
    public var isStopping: Bool { stopping.withLock { $0 } }

    /// Starts the thread. Idempotent.
    public func start() {
        let first = started.withLock { started -> Bool in
            defer { started = true }
            return !started
        }
        guard first else { return }
        let thread = Thread { [self] in
            while waitInterval() { work() }
            finished.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Wakes the thread, interrupts a run in progress and waits for the
    /// thread to end. Idempotent; safe before `start`.
    public func stop() {
        let wasRunning = started.withLock { $0 }
        let first = stopping.withLock { stopping -> Bool in
            defer { stopping = true }
            return !stopping
        }
        guard first else { return }
        interrupt()
        wakeup.lock()
        wakeup.broadcast()
        wakeup.unlock()
        if wasRunning { finished.wait() }
    }

    /// Sleeps one interval; `false` when stopped meanwhile.
    private func waitInterval() -> Bool {
        let deadline = Date().addingTimeInterval(interval / .seconds(1))
        wakeup.lock()
        defer { wakeup.unlock() }
        while !isStopping {
            if !wakeup.wait(until: deadline) { return !isStopping }
        }
        return false
    }
}
