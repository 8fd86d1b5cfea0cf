/// A part of the process that runs in the background between a start and a
/// stop (a thread, a listening socket), in one shape so a `ServiceGroup` can
/// bring several up in order and down in reverse.
///
/// Both calls block their thread until done, as the services' own work
/// does (a stop waits for a thread to end, a server drains its requests):
/// call them from a plain thread, never from a Swift concurrency task.
public protocol Service: Sendable {
    /// Names the service when its start fails.
    var name: String { get }

    /// Begins the service's work. A start that throws leaves nothing
    /// running, so there is nothing to stop.
    func start() throws

    /// Ends the service's work and returns once it has ended. Idempotent,
    /// and safe before `start` or after a failed one.
    func stop()
}
