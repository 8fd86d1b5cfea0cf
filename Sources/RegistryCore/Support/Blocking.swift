import Dispatch
import Synchronization

/// Runs async work from a plain thread (the sweeper's, or a subcommand's
/// main thread) and waits for it. Never call it from a Swift concurrency
/// task: it blocks the thread it runs on.
public enum Blocking {
    /// `started` receives the task running `body` before the wait begins,
    /// so the caller can cancel it from another thread.
    public static func result<T: Sendable>(started: (Task<Void, Never>) -> Void = { _ in },
                                           _ body: @escaping @Sendable () async throws -> T) -> Result<T, any Error> {
        let done = DispatchSemaphore(value: 0)
        let box = Mutex<Result<T, any Error>?>(nil)
        let task = Task {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            box.withLock { $0 = result }
            done.signal()
        }
        started(task)
        done.wait()
        return box.withLock { $0! }
    }
}

