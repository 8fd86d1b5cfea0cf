import Foundation
import Synchronization

/// A `TaskExecutor` on threads of its own, each at one nice value
/// (`ThreadNiceness`). A task created with it as its preference
/// (`Task.detached(executorPreference:)`) runs, with its child tasks, its
/// nonisolated code and default actors' on these threads rather than on
/// Swift's cooperative pool, which the API's requests share: with a higher
/// nice value that work slows under CPU contention, not the API's answers.
///
/// `start` starts the threads. `stop` runs the jobs already queued, ends
/// the threads and waits for them; it comes after every task preferring
/// this executor has ended, since nothing would run a job enqueued later.
public final class ThreadExecutor: TaskExecutor {
    private struct State {
        var jobs = FIFO<UnownedJob>()
        var started = false
        var stopping = false
    }

    public let name: String
    private let threads: Int
    private let niceness: Int32
    private let state = Mutex(State())
    /// One signal per job queued, and one per thread at `stop`: a thread
    /// that finds no job after a signal has been told to end.
    private let signals = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - name: the threads are `name-1`, `name-2`, …
    ///   - threads: at least one.
    ///   - niceness: each thread's nice value; 0 keeps the process's.
    public init(name: String, threads: Int, niceness: Int32) {
        self.name = name
        self.threads = max(1, threads)
        self.niceness = niceness
    }

    /// Starts the threads. Only the first call does anything, and none after `stop`.
    public func start() {
        let first = state.withLock { state -> Bool in
            guard !state.started, !state.stopping else { return false }
            state.started = true
            return true
        }
        guard first else { return }
        for index in 1...threads {
            let thread = Thread { [self] in
                ThreadNiceness.apply(niceness)
                while case let job? = nextJob() { job.runSynchronously(on: asUnownedTaskExecutor()) }
                finished.signal()
            }
            thread.name = "\(name)-\(index)"
            thread.start()
        }
    }

    /// Runs what is queued, then ends the threads and waits for them.
    /// Idempotent; safe before `start`. Never from one of its own threads.
    public func stop() {
        let running = state.withLock { state -> Bool in
            defer { state.stopping = true }
            return state.started && !state.stopping
        }
        guard running else { return }
        for _ in 0..<threads { signals.signal() }
        for _ in 0..<threads { finished.wait() }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        state.withLock { state in
            precondition(state.started && !state.stopping, "a job was enqueued on \(name) while its threads were not running")
            state.jobs.append(job)
        }
        signals.signal()
    }

    /// The next job, waiting for one; `nil` once `stop` ends this thread.
    private func nextJob() -> UnownedJob? {
        signals.wait()
        return state.withLock { $0.jobs.popFirst() }
    }
}
