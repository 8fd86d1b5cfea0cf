import Foundation

/// Time as the queue sees it: a monotonic instant for pacing (coalescing,
/// backoff, refresh) and the wall-clock date for `Retry-After` dates and the
/// sequence floor.
///
/// Injected so tests move time by hand and wait for nothing.
public protocol RegistryClock: Sendable {
    var now: ContinuousClock.Instant { get }
    var date: Date { get }
    /// Returns at `deadline`, or throws `CancellationError` when the task is
    /// cancelled first.
    func sleep(until deadline: ContinuousClock.Instant) async throws
}

/// The real clock. `ContinuousClock` keeps counting while the device sleeps,
/// so a 24-hour refresh interval means 24 hours of the user's time.
public struct SystemRegistryClock: RegistryClock {
    public init() {}

    public var now: ContinuousClock.Instant { ContinuousClock.now }

    public var date: Date { Date() }

    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        try await ContinuousClock().sleep(until: deadline, tolerance: nil)
    }
}
