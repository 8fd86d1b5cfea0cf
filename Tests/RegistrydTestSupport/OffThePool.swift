import Foundation

/// Runs blocking work (waiting for a child process, a socket exchange, a
/// semaphore) on a thread of its own. Every suite of the test process
/// shares one cooperative pool with as many threads as the machine has
/// cores (two here): a test that blocks one of them stalls every other
/// test's tasks, and can starve the very task it waits for.
package func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// `offThePool` for work that cannot fail.
package func offThePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}
