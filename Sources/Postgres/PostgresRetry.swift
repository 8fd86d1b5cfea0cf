import Codecs
import Foundation

/// When a failed attempt at a transaction runs again, and after what pause:
/// the one retry rule of every transaction and read registryd sends to
/// PostgreSQL (the pool's `transaction`, the store's writes and reads, and
/// work that holds its connection across transactions).
///
/// Run again:
/// - after a serialization failure (40001) or a deadlock (40P01), and a
///   unique violation (23505) when asked: up to `maxAttempts` attempts in
///   all, after a random 0…2ⁿ ms (n the attempt, at most 100 ms);
/// - when `reconnecting`, after the connection broke, or turned out to be
///   a read-only standby (25006), before COMMIT was sent, or none could be
///   opened: nothing was committed, so twice at most, after 100–200 ms,
///   then 200–400 ms, so one failover or killed connection costs no error
///   but an outage surfaces quickly.
///
/// Never: a COMMIT whose outcome is unknown (the caller answers 503 and the
/// client's retry with its sequence settles it), an aborted transaction,
/// and any other error. The attempt must have no effect outside the database.
public struct PostgresRetry: Sendable {
    public var maxAttempts: Int
    public var retriesUniqueViolations: Bool
    /// False for a transaction on a connection the caller holds (a session
    /// lock's): a broken connection cannot be replaced under it.
    public var reconnecting: Bool
    private var attempts = 0
    private var reconnections = 0

    public init(maxAttempts: Int = 10, retryingUniqueViolations: Bool = false, reconnecting: Bool = true) {
        precondition(maxAttempts >= 1)
        self.maxAttempts = maxAttempts
        self.retriesUniqueViolations = retryingUniqueViolations
        self.reconnecting = reconnecting
    }

    /// The pause before the next attempt after `error`, or nil: throw it.
    public mutating func pause(after error: any Error) -> Duration? {
        guard let error = error as? PostgresError else { return nil }
        attempts += 1
        guard attempts < maxAttempts else { return nil }
        if error.isSerializationFailure || (retriesUniqueViolations && error.isUniqueViolation()) {
            let ceiling = min(100, 1 << min(attempts, 7))
            return .microseconds(Int.random(in: 0...ceiling * 1_000))
        }
        if reconnecting, reconnections < 2, error.failedBeforeCommit {
            reconnections += 1
            let base = 100 << (reconnections - 1)
            return .milliseconds(Int.random(in: base...base * 2))
        }
        return nil
    }

    /// Runs `attempt` until it returns, or fails with an error not to retry.
    public func run<T>(_ attempt: () async throws -> T) async throws -> T {
        var retry = self
        while true {
            do {
                return try await attempt()
            } catch {
                guard let pause = retry.pause(after: error) else { throw error }
                try await Task.sleep(for: pause)
            }
        }
    }

    /// `run` for work on a connection's own thread (it sleeps the thread).
    public func runBlocking<T>(_ attempt: () throws -> T) throws -> T {
        var retry = self
        while true {
            do {
                return try attempt()
            } catch {
                guard let pause = retry.pause(after: error) else { throw error }
                Thread.sleep(forTimeInterval: pause.inSeconds)
            }
        }
    }
}
