import Codecs
import RegistryCore
import Foundation
import Lifecycle
import LMDB
import Synchronization

/// The one thread that owns every write transaction.
///
/// Callers `submit` a command and suspend; the writer takes every command
/// waiting (up to `maxBatchSize`), runs each in its own nested transaction
/// (so a command that fails its own rule fails alone and the rest commit),
/// commits the batch with fsync, and only then resumes each caller with its
/// own result. Durability costs one fsync per batch, not per request.
///
/// A failed commit is never acknowledged. A map that reached its configured
/// maximum fails the batch with `.storageFull` and writing goes on (nothing
/// touched the disk). Any other failure (EIO or ENOSPC from a page write or
/// the fsync, which LMDB does not tell apart; `MDB_PANIC`; a map that could
/// not grow) fails the batch, every command queued behind it and every later
/// one with `.unavailable`: nothing commits again in this process, since
/// nothing after a failed fsync can be trusted (PostgreSQL's fsyncgate).
///
/// `submit` is refused until `start`, which starts the thread, and after
/// `stop`, which commits what is queued and ends it.
final class GroupCommitWriter: Service {
    /// One caller's command, type-erased so a batch can hold many kinds.
    private struct Command: Sendable {
        let apply: @Sendable (WriteTransaction) throws -> any Sendable
        let complete: @Sendable (Result<any Sendable, any Error>) -> Void
    }

    private struct State {
        var queue: [Command] = []
        var started = false
        var stopping = false
        var failure: RegistryError?
    }

    private let environment: Environment
    private let maxBatchSize: Int
    private let onCommit: (@Sendable (CommitBatchReport) -> Void)?
    private let state = Mutex(State())
    private let wakeup = NSCondition()
    private let finished = DispatchSemaphore(value: 0)

    init(environment: Environment, maxBatchSize: Int, onCommit: (@Sendable (CommitBatchReport) -> Void)?) {
        self.environment = environment
        self.maxBatchSize = max(1, maxBatchSize)
        self.onCommit = onCommit
    }

    var name: String { "registry-writer" }

    /// Starts the writer thread. Idempotent; does nothing after `stop`.
    func start() {
        let first = state.withLock { s -> Bool in
            defer { s.started = true }
            return !s.started && !s.stopping
        }
        guard first else { return }
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    /// `false` once a commit failed for a reason other than a full map.
    var isHealthy: Bool { state.withLock { $0.failure == nil } }

    /// Commands waiting for the next batch.
    var queuedCommands: Int { state.withLock { $0.queue.count } }

    /// Runs `body` in the next batch; returns after that batch committed.
    func submit<T: Sendable>(_ body: @escaping @Sendable (WriteTransaction) throws -> T) async throws -> T {
        let value: any Sendable = try await withCheckedThrowingContinuation { continuation in
            let command = Command(apply: { txn in try body(txn) }, complete: { continuation.resume(with: $0) })
            let refusal: RegistryError? = state.withLock { s in
                if let failure = s.failure { return failure }
                if s.stopping { return .unavailable(reason: "shutting down") }
                if !s.started { return .unavailable(reason: "the writer is not started") }
                s.queue.append(command)
                return nil
            }
            if let refusal {
                continuation.resume(throwing: refusal)
            } else {
                wakeup.lock()
                wakeup.signal()
                wakeup.unlock()
            }
        }
        return value as! T
    }

    /// Stops taking commands, commits what is queued, and waits for the
    /// thread to end. Idempotent; safe before `start`.
    func stop() {
        let (first, running) = state.withLock { s -> (Bool, Bool) in
            defer { s.stopping = true }
            return (!s.stopping, s.started)
        }
        guard first, running else { return }
        wakeup.lock()
        wakeup.signal()
        wakeup.unlock()
        finished.wait()
    }

    private func run() {
        while let batch = nextBatch() {
            if let failure = state.withLock({ $0.failure }) {
                for command in batch { command.complete(.failure(failure)) }
            } else {
                commit(batch)
            }
        }
        finished.signal()
    }

    /// Blocks until commands wait or the writer stops with an empty queue.
    private func nextBatch() -> [Command]? {
        wakeup.lock()
        defer { wakeup.unlock() }
        while true {
            let (batch, done) = state.withLock { s -> ([Command], Bool) in
                let batch = Array(s.queue.prefix(maxBatchSize))
                s.queue.removeFirst(batch.count)
                return (batch, s.stopping && batch.isEmpty)
            }
            if !batch.isEmpty { return batch }
            if done { return nil }
            wakeup.wait()
        }
    }

    private func commit(_ batch: [Command]) {
        let started = ContinuousClock.now
        let outcome = Result { () throws -> [Result<any Sendable, any Error>] in
            try environment.write { txn in
                try batch.map { command in
                    do {
                        return .success(try txn.nested { try command.apply($0) })
                    } catch let error as LMDBError where !Self.isCommandLocal(error) {
                        throw error
                    } catch {
                        return .failure(error)
                    }
                }
            }
        }
        let seconds = (ContinuousClock.now - started).inSeconds
        switch outcome {
        case .success(let results):
            onCommit?(CommitBatchReport(commands: batch.count, succeeded: true, seconds: seconds))
            for (command, result) in zip(batch, results) { command.complete(result) }
        case .failure(let error):
            onCommit?(CommitBatchReport(commands: batch.count, succeeded: false, seconds: seconds))
            let failure = Self.classify(error)
            if case .unavailable = failure { state.withLock { $0.failure = failure } }
            for command in batch { command.complete(.failure(failure)) }
        }
    }

    /// LMDB errors that concern one command's own data (a key too long),
    /// not the environment: that command fails, the batch goes on.
    private static func isCommandLocal(_ error: LMDBError) -> Bool {
        switch error {
        case .badValueSize, .keyExists, .notFound: true
        default: false
        }
    }

    static func classify(_ error: any Error) -> RegistryError {
        if let lmdb = error as? LMDBError, lmdb == .mapFull { return .storageFull }
        return .unavailable(reason: "commit failed: \(error)")
    }
}
