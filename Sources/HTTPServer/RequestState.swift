import CMicroHTTPD
import Synchronization

/// libmicrohttpd's connection handle, carried from the server thread that
/// suspended it to the task that resumes it. Sendable by contract:
/// `MHD_resume_connection` is documented safe to call from any thread, and a
/// suspended connection is never freed until it is resumed.
struct ConnectionHandle: @unchecked Sendable {
    let raw: OpaquePointer
}

/// Per-request state, stored in libmicrohttpd's `*req_cls` from the URI log
/// callback until `MHD_OPTION_NOTIFY_COMPLETED`.
///
/// It is reference counted rather than freed by hand: the server holds one
/// reference (released when libmicrohttpd reports the request complete or
/// aborted) and a running handler task holds another, so a task that
/// finishes after its connection died never touches freed memory.
///
/// `phase`, `request` and `body` are touched only by libmicrohttpd's
/// callbacks, which it serialises per connection (one worker thread owns a
/// connection; suspend/resume hands it over through the daemon's own
/// locks). Only `completion` crosses threads, so only it is locked — hence
/// `@unchecked Sendable`.
final class RequestState: @unchecked Sendable {
    /// Where the request is in libmicrohttpd's call sequence.
    enum Phase {
        /// The first access-handler call (headers complete) has not happened.
        case awaitingHeaders
        /// Body bytes are being collected, up to the limit, for `handler`.
        case readingBody(limit: Int, handler: RequestHandler)
        /// `head` answered a bodiless request, or a chunked body overran its
        /// limit: queue this on the final call (libmicrohttpd 0.9.75 refuses
        /// a response queued mid-body), dropping at most `discard` more body
        /// bytes meanwhile.
        case answerWhenComplete(HTTPResponse, discard: Int)
        /// Suspended while `handle` runs; the response arrives in `completion`.
        case handling
        /// A response is queued; any further body bytes are dropped.
        case answered
    }

    /// The hand-over between the handler task (or `stop`) and the server thread.
    enum Completion {
        case pending
        case suspended(ConnectionHandle)
        case done(HTTPResponse)
        case delivered
    }

    /// The raw request target from the request line (path and query, undecoded).
    let target: String
    /// The connection's deadline record; nil only if libmicrohttpd gave no socket.
    let connection: TrackedConnection?
    var phase: Phase = .awaitingHeaders
    var request = HTTPRequest(method: "", path: "")
    var body: [UInt8] = []
    private let completion = Mutex<Completion>(.pending)

    init(target: String, connection: TrackedConnection?) {
        self.target = target
        self.connection = connection
    }

    /// Suspends the connection while the handler runs, unless `stop` already
    /// answered the request, in which case that answer is returned to queue now.
    /// Suspending under the lock closes the race with a concurrent `finish`.
    func suspend(_ connection: OpaquePointer) -> HTTPResponse? {
        completion.withLock { state -> HTTPResponse? in
            if case .done(let response) = state {
                state = .delivered
                return response
            }
            MHD_suspend_connection(connection)
            state = .suspended(ConnectionHandle(raw: connection))
            return nil
        }
    }

    /// Records the answer and resumes the connection so a server thread
    /// queues it. The first answer wins: a handler finishing after `stop`
    /// answered for it changes nothing. Resuming happens outside the lock.
    func finish(_ response: HTTPResponse) {
        let toResume = completion.withLock { state -> ConnectionHandle? in
            switch state {
            case .pending:
                state = .done(response)
                return nil
            case .suspended(let handle):
                state = .done(response)
                return handle
            case .done, .delivered:
                return nil
            }
        }
        if let toResume { MHD_resume_connection(toResume.raw) }
    }

    /// The answer recorded by `finish`, taken once.
    func takeResponse() -> HTTPResponse? {
        completion.withLock { state -> HTTPResponse? in
            guard case .done(let response) = state else { return nil }
            state = .delivered
            return response
        }
    }
}
