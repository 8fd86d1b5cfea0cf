import Foundation
import Synchronization

/// A thread that runs some work once per interval (from the end of one run
/// to the start of the next) until stopped: the one loop behind the
/// sweeper, the HTTP server's connection reaper and the stores' key
/// watchers.
///
/// The work is given to `start`, not to `init`, so an owner can make its
/// thread in its own `init` and hand it work that holds the owner weakly.
/// `stop()` wakes the thread at once (no run starts after it), calls
/// `interrupt` so a run in progress can end early, and waits for the thread.
public final class PeriodicThread: Sendable {
    public let name: String
    private let interval: Duration
    private let interrupt: @Sendable () -> Void
    private let state = Mutex<(started: Bool, stopping: Bool)>((false, false))
    private let wakeup = NSCondition()
    private let finished = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - interval: at least a millisecond.
    ///   - interrupt: called by `stop` (from the stopping thread) while a run may be in progress.
    public init(name: String, interval: Duration, interrupt: @escaping @Sendable () -> Void = {}) {
        self.name = name
        self.interval = max(.milliseconds(1), interval)
        self.interrupt = interrupt
    }

    /// Whether `stop` was called: a long run may check it between steps.
    public var isStopping: Bool { state.withLock { $0.stopping } }

    /// Starts the thread running `work` once per interval, the first time
    /// one interval from now; with `runningFirst`, `work` also runs once
    /// here, before `start` returns. Only the first call (before any `stop`)
    /// starts anything.
    public func start(runningFirst: Bool = false, _ work: @escaping @Sendable () -> Void) {
        let first = state.withLock { state -> Bool in
            guard !state.started, !state.stopping else { return false }
            state.started = true
            return true
        }
        guard first else { return }
        if runningFirst { work() }
        let thread = Thread { [self] in
            while waitInterval() { work() }
            finished.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Wakes the thread, interrupts a run in progress and waits for the
    /// thread to end. Returns whether this call stopped a started thread
    /// (false when it never started, or was stopped before). Safe before `start`.
    @discardableResult
    public func stop() -> Bool {
        let (wasStarted, first) = state.withLock { state -> (Bool, Bool) in
            defer { state.stopping = true }
            return (state.started, !state.stopping)
        }
        guard first else { return false }
        interrupt()
        wakeup.lock()
        wakeup.broadcast()
        wakeup.unlock()
        if wasStarted { finished.wait() }
        return wasStarted
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
