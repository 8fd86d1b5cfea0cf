/// What the application decides once a request's headers are complete.
public enum HeadDecision: Sendable {
    /// Answer now; the body (if any) is not delivered to `handle`. When the
    /// request announced a body, the connection is closed after answering,
    /// since the unread body cannot be skipped safely.
    case respond(HTTPResponse)
    /// Read the body up to this many bytes, then call `handle`; a longer body
    /// is answered `413 payload_too_large` and the connection closed.
    case readBody(maxBytes: Int)
}

/// The application the server calls; it knows nothing of sockets.
public protocol HTTPApplication: Sendable {
    /// Called once the headers are complete (body empty): lets the application answer route/auth/media-type/
    /// declared-size errors before any body is read, in the contract's check order. Runs on a server
    /// thread, so it must not block.
    func head(_ request: HTTPRequest) -> HeadDecision
    /// Called with the complete request. Runs as a Swift task; the connection is suspended meanwhile
    /// (MHD_suspend_connection / MHD_resume_connection), so a slow write (group commit) never blocks a server thread.
    func handle(_ request: HTTPRequest) async -> HTTPResponse
}
