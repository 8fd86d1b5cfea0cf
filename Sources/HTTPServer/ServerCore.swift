import Synchronization

/// The state libmicrohttpd's callbacks share: the application, the limits,
/// the connection deadlines and their reaper, and the bookkeeping
/// `HTTPServer.stop` drains by.
///
/// Its address is the `cls` of every callback; `HTTPServer` keeps it alive
/// until the daemon has stopped, and handler tasks hold their own reference.
final class ServerCore: Sendable {
    let application: any HTTPApplication
    let configuration: HTTPServerConfiguration
    let deadlines: ConnectionDeadlines
    let reaper: ConnectionReaper
    /// Open TCP connections (MHD_OPTION_NOTIFY_CONNECTION).
    let connections = Atomic<Int>(0)
    /// Requests between their request line and their completion notice,
    /// including those whose handler is running.
    let liveRequests = Atomic<Int>(0)
    /// Set by `stop`: new requests are answered 503.
    let stopping = Atomic<Bool>(false)
    /// Requests whose handler is running, so `stop` can answer them itself
    /// when the drain deadline passes; `refusing` turns new ones away.
    private let handling = Mutex<(refusing: Bool, states: [ObjectIdentifier: RequestState])>((false, [:]))

    init(application: any HTTPApplication, configuration: HTTPServerConfiguration) {
        self.application = application
        self.configuration = configuration
        deadlines = ConnectionDeadlines(configuration: configuration)
        reaper = ConnectionReaper(scanInterval: deadlines.scanInterval)
    }

    /// The answer to a request that arrives while the server is stopping.
    static let unavailable: HTTPResponse = {
        var response = HTTPResponse.error(status: 503, code: "unavailable", message: "the server is shutting down",
                                          closeConnection: true)
        response.headers.append(("Retry-After", HTTPResponse.retryAfterSeconds))
        return response
    }()

    /// Records that `state`'s handler is about to run; false once `stop`
    /// has answered every running handler, after which none may start.
    func admitToHandling(_ state: RequestState) -> Bool {
        handling.withLock { handling in
            guard !handling.refusing else { return false }
            handling.states[ObjectIdentifier(state)] = state
            return true
        }
    }

    /// `state`'s handler has returned.
    func handlingFinished(_ state: RequestState) {
        _ = handling.withLock { $0.states.removeValue(forKey: ObjectIdentifier(state)) }
    }

    /// Refuses new handlers and answers every running one with 503, so that
    /// no connection stays suspended (libmicrohttpd aborts the process when
    /// stopped with a suspended connection).
    func abandonRunningHandlers() {
        let running = handling.withLock { handling -> [RequestState] in
            handling.refusing = true
            return Array(handling.states.values)
        }
        for state in running { state.finish(Self.unavailable) }
    }
}
