/// What the application decides once a request's headers are complete.
public enum HeadDecision: Sendable {
    /// Answer now; the body (if any) is not delivered. When the request
    /// announced a body, the connection is closed after answering, since the
    /// unread body cannot be skipped safely.
    case respond(HTTPResponse)
    /// Read the body up to this many bytes, then run `then` with the complete
    /// request; a longer body is answered `413 payload_too_large` and the
    /// connection closed. `then` carries whatever `head` established (route,
    /// credential), so nothing is decided twice.
    case readBody(maxBytes: Int, then: RequestHandler)
}

/// How the complete request is answered, chosen per request by `head`.
public enum RequestHandler: Sendable {
    /// Runs on the server thread as soon as the body is complete, with no
    /// suspend/resume and no task: for work that never waits (an LMDB read,
    /// a health check). It must not block on anything but memory.
    case inline(@Sendable (HTTPRequest) -> HTTPResponse)
    /// Runs as a Swift task while the connection is suspended
    /// (MHD_suspend_connection / MHD_resume_connection): for work that waits,
    /// such as a group commit, so no server thread is held meanwhile.
    case suspending(@Sendable (HTTPRequest) async -> HTTPResponse)
}

/// The application the server calls; it knows nothing of sockets.
public protocol HTTPApplication: Sendable {
    /// Called once the headers are complete (body empty): answers route/auth/media-type/declared-size errors
    /// before any body is read, in the contract's check order, or says how to handle the whole request.
    /// Runs on a server thread, so it must not block.
    func head(_ request: HTTPRequest) -> HeadDecision
}
