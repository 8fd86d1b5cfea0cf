import Dispatch
import Synchronization

/// Runs async work from a plain thread (the sweeper's, or a subcommand's
/// main thread) and waits for it. Never call it from a Swift concurrency
/// task: it blocks the thread it runs on.
public enum Blocking {
    public static func result<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) -> Result<T, any Error> {
        let done = DispatchSemaphore(value: 0)
        let box = Mutex<Result<T, any Error>?>(nil)
        Task {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            box.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return box.withLock { $0! }
    }
}

extension Duration {
    /// The duration in seconds, for metrics and logs.
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
