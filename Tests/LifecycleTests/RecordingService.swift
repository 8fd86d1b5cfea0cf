import Lifecycle
import Synchronization

/// The calls services made, in order: `"start a"`, `"stop b"`.
final class CallLog: Sendable {
    private let calls = Mutex<[String]>([])

    func append(_ call: String) { calls.withLock { $0.append(call) } }

    var all: [String] { calls.withLock { $0 } }
}

/// A service that records its starts and stops and, when told to, fails to start.
final class RecordingService: Service {
    struct StartFailed: Error {}

    let name: String
    private let log: CallLog
    private let failsToStart: Bool

    init(_ name: String, log: CallLog, failsToStart: Bool = false) {
        self.name = name
        self.log = log
        self.failsToStart = failsToStart
    }

    func start() throws {
        log.append("start \(name)")
        if failsToStart { throw StartFailed() }
    }

    func stop() {
        log.append("stop \(name)")
    }
}
