import CMicroHTTPD

/// The access handler's state machine: libmicrohttpd calls it once when the
/// headers are complete, once per arriving piece of body, once with no data
/// when the body is complete, and again after each resume.
extension ServerCore {
    /// `upload` holds `size.pointee` body bytes; setting it to 0 consumes them.
    func access(_ state: RequestState, connection: OpaquePointer, method: String, version: String,
                upload: UnsafeRawPointer?, size: UnsafeMutablePointer<Int>) -> MHD_Result {
        switch state.phase {
        case .awaitingHeaders:
            return begin(state, connection: connection, method: method, version: version)
        case .readingBody(let limit, let handler):
            let count = size.pointee
            guard count > 0 else { return dispatch(state, handler, connection: connection) }
            size.pointee = 0
            if state.body.count + count > limit {
                state.body = []
                state.phase = .answerWhenComplete(Self.tooLarge(limit), discard: max(limit, Self.minimumDiscard) - count)
                return .YES
            }
            if let upload { state.body.append(contentsOf: UnsafeRawBufferPointer(start: upload, count: count)) }
            return .YES
        case .answerWhenComplete(let response, let discard):
            let count = size.pointee
            guard count > 0 else { return answer(state, connection: connection, response) }
            size.pointee = 0
            guard count <= discard else { return .NO }
            state.phase = .answerWhenComplete(response, discard: discard - count)
            return .YES
        case .handling:
            guard let response = state.takeResponse() else { return .YES }
            return answer(state, connection: connection, response)
        case .answered:
            size.pointee = 0
            return .YES
        }
    }

    /// Headers are complete: build the head request, check framing, ask the application.
    private func begin(_ state: RequestState, connection: OpaquePointer, method: String, version: String) -> MHD_Result {
        let collected = HeaderCollector.collect(from: connection)
        let target = HTTPRequest.splitTarget(state.target)
        let requestLine = method.utf8.count + 1 + state.target.utf8.count + 1 + version.utf8.count + 2
        state.request = HTTPRequest(method: method, path: target.path, query: target.query, version: version)
        state.request.headers = collected.headers
        if stopping.load(ordering: .acquiring) {
            return answer(state, connection: connection, Self.unavailable)
        }
        switch RequestFraming.check(collected.headers, headerBytes: requestLine + collected.bytes,
                                    maxHeaderBytes: configuration.maxHeaderBytes) {
        case .reject(let response):
            return answer(state, connection: connection, response)
        case .accept(let body):
            if let tracked = state.connection { deadlines.headComplete(tracked, bodyExpected: body.expected) }
            switch application.head(state.request) {
            case .readBody(let maxBytes, let handler):
                if case .length(let declared) = body, declared > maxBytes {
                    return answer(state, connection: connection, Self.tooLarge(maxBytes))
                }
                state.phase = .readingBody(limit: maxBytes, handler: handler)
                return .YES
            case .respond(var response):
                guard body.expected else {
                    state.phase = .answerWhenComplete(response, discard: 0)
                    return .YES
                }
                response.closeConnection = true
                return answer(state, connection: connection, response)
            }
        }
    }

    /// The body is complete: answer an inline handler now, or suspend the
    /// connection and run a suspending one as a task.
    private func dispatch(_ state: RequestState, _ handler: RequestHandler, connection: OpaquePointer) -> MHD_Result {
        var request = state.request
        request.body = state.body
        state.body = []
        let run: @Sendable (HTTPRequest) async -> HTTPResponse
        switch handler {
        case .inline(let respond):
            // `stop` waits for server threads, so an inline handler needs no drain bookkeeping.
            return answer(state, connection: connection, respond(request))
        case .suspending(let respond):
            run = respond
        }
        guard admitToHandling(state) else {
            return answer(state, connection: connection, Self.unavailable)
        }
        state.phase = .handling
        if let tracked = state.connection { deadlines.bodyComplete(tracked) }
        if let forced = state.suspend(connection) {
            handlingFinished(state)
            return answer(state, connection: connection, forced)
        }
        Task {
            let response = await run(request)
            state.finish(response)
            self.handlingFinished(state)
        }
        return .YES
    }

    /// How much of an overrunning chunked body is read and dropped so its
    /// 413 can still be sent; past this the connection is cut unanswered.
    static let minimumDiscard = 64 * 1024

    private static func tooLarge(_ limit: Int) -> HTTPResponse {
        .error(status: 413, code: "payload_too_large", message: "request body exceeds \(limit) bytes",
               closeConnection: true)
    }

    private func answer(_ state: RequestState, connection: OpaquePointer, _ response: HTTPResponse) -> MHD_Result {
        state.phase = .answered
        if let tracked = state.connection { deadlines.bodyComplete(tracked) }
        return ResponseWriter.queue(response, on: connection)
    }
}
