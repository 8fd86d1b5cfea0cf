import Synchronization

/// Services started in the order listed and stopped in reverse, so each
/// starts after what it depends on and stops before it; the process's
/// whole startup and shutdown order is one list.
///
/// If a start fails, the services already started are stopped (in reverse)
/// before the failure is thrown. A group runs once: it is not restarted
/// after `stop`.
public final class ServiceGroup: Sendable {
    public enum StartError: Error, CustomStringConvertible {
        /// `service`'s start threw `error`; the services before it were stopped again.
        case failed(service: String, error: any Error)
        /// `start` was called before, or after `stop`.
        case alreadyStarted

        public var description: String {
            switch self {
            case .failed(let service, let error): "\(service): \(error)"
            case .alreadyStarted: "the service group was already started"
            }
        }
    }

    private enum Phase {
        case idle
        /// The first `count` services are running.
        case running(count: Int)
        case stopped
    }

    private let services: [any Service]
    /// Held while services start or stop, so a `stop` racing a `start` waits
    /// for it and then stops whatever it started.
    private let phase = Mutex(Phase.idle)

    public init(_ services: [any Service]) {
        self.services = services
    }

    /// Starts every service in order; on a failure, stops the ones started
    /// (in reverse) and throws `.failed` naming the service.
    public func start() throws(StartError) {
        try phase.withLock { phase throws(StartError) in
            guard case .idle = phase else { throw .alreadyStarted }
            phase = .running(count: 0)
            for (index, service) in services.enumerated() {
                do {
                    try service.start()
                } catch {
                    Self.stop(services[..<index])
                    phase = .stopped
                    throw .failed(service: service.name, error: error)
                }
                phase = .running(count: index + 1)
            }
        }
    }

    /// Stops the running services in reverse order and returns once all have
    /// stopped. Idempotent; before `start` it only prevents one.
    public func stop() {
        phase.withLock { phase in
            if case .running(let count) = phase { Self.stop(services[..<count]) }
            phase = .stopped
        }
    }

    private static func stop(_ started: ArraySlice<any Service>) {
        for service in started.reversed() { service.stop() }
    }
}
