import Codecs
import Dispatch
import Foundation
import Synchronization

/// N connections, each owned by a dedicated thread that takes work from one
/// shared queue, so no Swift concurrency thread ever blocks on the network
/// (see the module documentation in Postgres.swift).
///
/// Connections are opened lazily, on a thread's first job, and replaced on
/// the job after they broke (closed socket, server shutdown, failover, a
/// read-only standby): libpq then chooses the host again from the
/// connection string. A thread whose connection attempt failed waits before
/// its next attempt (50 ms doubling to 1 s, jittered); the job that found
/// no connection fails with `.connectFailed` rather than waiting for the
/// database to come back.
///
/// After every job the connection is left idle: an open or failed
/// transaction the body left behind is rolled back, and a connection that
/// cannot be rolled back is replaced.
public final class PostgresPool: Sendable {
    /// The number of connections (and threads).
    public let size: Int
    private let state: PoolState

    /// Starts `size` threads named `name-0`, `name-1`, …; connects nothing yet.
    public init(connectionString: String, size: Int = 4, name: String = "postgres") {
        precondition(size >= 1, "a pool needs at least one connection")
        self.size = size
        let state = PoolState(connectionString: connectionString, workers: size)
        self.state = state
        for index in 0..<size {
            let thread = Thread { runWorker(state) }
            thread.name = "\(name)-\(index)"
            thread.start()
        }
    }

    deinit { state.shutdown() }

    /// Runs `body` on one of the pool's connections, on that connection's
    /// thread, and returns its value; the caller is suspended, not blocked,
    /// meanwhile. Throws what the body throws, `.connectFailed` when no
    /// connection could be opened, `.poolClosed` after `close()`, and
    /// `CancellationError` when the calling task was cancelled before a
    /// thread took the work (once taken, the body runs to its end).
    @discardableResult
    public func withConnection<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        try Task.checkCancellation()
        let id = state.makeJobID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                state.enqueue(Job(id: id,
                                  run: { connection in continuation.resume(with: Result { try body(connection) }) },
                                  fail: { continuation.resume(throwing: $0) }))
            }
        } onCancel: {
            state.cancel(id)
        }
    }

    /// Stops the pool: work still queued fails with `.poolClosed`, work
    /// running finishes, then every thread closes its connection and exits.
    /// Returns once all have exited.
    public func close() async {
        state.shutdown()
        await state.waitForExit()
    }

    /// Stops the pool without waiting (for a caller that cannot suspend):
    /// work still queued fails with `.poolClosed`, running work finishes,
    /// then every thread closes its connection and exits on its own.
    public func shutdown() {
        state.shutdown()
    }

    /// Connections opened successfully since the pool started (a first
    /// connection per thread, then each replacement).
    public var connectionsOpened: Int { state.connectionsOpened.load(ordering: .relaxed) }
}

// MARK: - Jobs and the queue

final class Job: Sendable {
    let id: UInt64
    let run: @Sendable (PostgresConnection) -> Void
    let fail: @Sendable (any Error) -> Void

    init(id: UInt64, run: @escaping @Sendable (PostgresConnection) -> Void,
         fail: @escaping @Sendable (any Error) -> Void) {
        self.id = id
        self.run = run
        self.fail = fail
    }
}

/// What the pool and its threads share. Every job leaves the queue exactly
/// once, under the lock (taken by a thread, cancelled, or failed by
/// shutdown), so its continuation is resumed exactly once.
final class PoolState: Sendable {
    struct Queue {
        var jobs: [Job?] = []
        var head = 0
        var closed = false
        var liveWorkers: Int
        var exitWaiters: [CheckedContinuation<Void, Never>] = []
        var nextID: UInt64 = 0

        mutating func pop() -> Job? {
            while head < jobs.count {
                let job = jobs[head]
                jobs[head] = nil
                head += 1
                if head > 64 && head * 2 > jobs.count {
                    jobs.removeFirst(head)
                    head = 0
                }
                if let job { return job }
            }
            return nil
        }
    }

    let connectionString: String
    let workers: Int
    let connectionsOpened = Atomic<Int>(0)
    private let queue: Mutex<Queue>
    /// Counts queued jobs (plus one per worker at shutdown); a worker waits on it.
    private let available = DispatchSemaphore(value: 0)

    init(connectionString: String, workers: Int) {
        self.connectionString = connectionString
        self.workers = workers
        queue = Mutex(Queue(liveWorkers: workers))
    }

    func makeJobID() -> UInt64 {
        queue.withLock { queue in
            queue.nextID += 1
            return queue.nextID
        }
    }

    func enqueue(_ job: Job) {
        let accepted = queue.withLock { queue in
            guard !queue.closed else { return false }
            queue.jobs.append(job)
            return true
        }
        if accepted {
            available.signal()
        } else {
            job.fail(PostgresError(kind: .poolClosed, message: "the connection pool is closed"))
        }
    }

    /// Removes a job that no thread has taken yet and fails it with CancellationError.
    func cancel(_ id: UInt64) {
        let removed: Job? = queue.withLock { queue in
            guard let index = queue.jobs[queue.head...].firstIndex(where: { $0?.id == id }) else { return nil }
            let job = queue.jobs[index]
            queue.jobs[index] = nil
            return job
        }
        removed?.fail(CancellationError())
    }

    /// The next job for a worker thread, blocking until there is one; nil once the pool is closed.
    func next() -> Job? {
        while true {
            available.wait()
            let (job, closed) = queue.withLock { queue in
                queue.closed ? (nil, true) : (queue.pop(), false)
            }
            if closed { return nil }
            if let job { return job }
            // A cancelled job's signal: nothing to take.
        }
    }

    func shutdown() {
        let drained: [Job] = queue.withLock { queue in
            guard !queue.closed else { return [] }
            queue.closed = true
            let jobs = queue.jobs[queue.head...].compactMap { $0 }
            queue.jobs = []
            queue.head = 0
            return jobs
        }
        for job in drained {
            job.fail(PostgresError(kind: .poolClosed, message: "the connection pool was closed"))
        }
        for _ in 0..<workers { available.signal() }
    }

    func workerExited() {
        let waiters: [CheckedContinuation<Void, Never>] = queue.withLock { queue in
            queue.liveWorkers -= 1
            guard queue.liveWorkers == 0 else { return [] }
            defer { queue.exitWaiters = [] }
            return queue.exitWaiters
        }
        waiters.forEach { $0.resume() }
    }

    func waitForExit() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = queue.withLock { queue in
                if queue.liveWorkers == 0 { return true }
                queue.exitWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}

// MARK: - The connection thread

/// One connection thread's life: take a job, make sure the connection is
/// usable (replacing it, with backoff after failures), run the job, leave
/// the connection idle.
private func runWorker(_ state: PoolState) {
    var connection: PostgresConnection?
    var failures = 0
    var retryAt: ContinuousClock.Instant?
    while let job = state.next() {
        if let current = connection, current.needsReplacement() {
            current.close()
            connection = nil
        }
        if connection == nil {
            if let retryAt {
                let wait = ContinuousClock.now.duration(to: retryAt)
                if wait > .zero { Thread.sleep(forTimeInterval: wait.inSeconds) }
            }
            do {
                connection = try PostgresConnection(state.connectionString)
                state.connectionsOpened.add(1, ordering: .relaxed)
                failures = 0
                retryAt = nil
            } catch {
                failures += 1
                let ceiling = min(1.0, 0.05 * Double(1 << min(failures - 1, 10)))
                retryAt = .now + .seconds(Double.random(in: ceiling / 2...ceiling))
                job.fail(error)
                continue
            }
        }
        guard let current = connection else { continue }
        job.run(current)
        if current.transactionStatus != .idle {
            current.rollbackQuietly()
        }
        if current.isBroken || current.discardRequested || current.transactionStatus != .idle {
            current.close()
            connection = nil
        }
    }
    connection?.close()
    state.workerExited()
}

