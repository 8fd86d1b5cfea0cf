import CMicroHTTPD

// libmicrohttpd's callbacks. They are plain global functions in a file that
// is not main.swift: a closure there would be main-actor isolated and trap
// when a worker thread calls it (docs/architecture.md, "C interop"). `cls` is
// always the `ServerCore`, passed unretained: `HTTPServer` outlives its daemon.

private func core(_ cls: UnsafeMutableRawPointer?) -> ServerCore? {
    cls.map { Unmanaged<ServerCore>.fromOpaque($0).takeUnretainedValue() }
}

/// MHD_OPTION_URI_LOG_CALLBACK: called once per request with the raw target,
/// before any decoding. The state it creates is the request's `*req_cls`,
/// retained here and released in `requestCompleted`.
func requestStarted(_ cls: UnsafeMutableRawPointer?, _ uri: UnsafePointer<CChar>?,
                    _ connection: OpaquePointer?) -> UnsafeMutableRawPointer? {
    guard let core = core(cls) else { return nil }
    core.liveRequests.add(1, ordering: .relaxed)
    let tracked = connection.flatMap { registryd_mhd_socket_context($0) }
        .map { Unmanaged<TrackedConnection>.fromOpaque($0).takeUnretainedValue() }
    if let tracked { core.deadlines.requestLineArrived(tracked) }
    let state = RequestState(target: uri.map { String(cString: $0) } ?? "/", connection: tracked)
    return Unmanaged.passRetained(state).toOpaque()
}

/// The access handler; see `ServerCore.access` for the call sequence.
func accessRequest(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
                   _ url: UnsafePointer<CChar>?, _ method: UnsafePointer<CChar>?,
                   _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
                   _ uploadSize: UnsafeMutablePointer<Int>?,
                   _ reqCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> MHD_Result {
    guard let core = core(cls), let connection, let uploadSize, let raw = reqCls?.pointee else { return .NO }
    let state = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()
    return core.access(state, connection: connection,
                       method: method.map { String(cString: $0) } ?? "",
                       version: version.map { String(cString: $0) } ?? "",
                       upload: UnsafeRawPointer(uploadData), size: uploadSize)
}

/// MHD_OPTION_NOTIFY_COMPLETED: the request was answered or aborted (also
/// for requests libmicrohttpd refused itself after the request line).
func requestCompleted(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
                      _ reqCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                      _ reason: MHD_RequestTerminationCode) {
    guard let core = core(cls), let reqCls, let raw = reqCls.pointee else { return }
    reqCls.pointee = nil
    let state = Unmanaged<RequestState>.fromOpaque(raw).takeRetainedValue()
    if let tracked = state.connection { core.deadlines.requestFinished(tracked) }
    core.liveRequests.subtract(1, ordering: .relaxed)
}

/// MHD_OPTION_NOTIFY_CONNECTION: counts open connections and hands each to
/// the reaper, its `TrackedConnection` retained in the socket context from
/// STARTED until CLOSED. libmicrohttpd closes the socket only after CLOSED
/// returns, which is what makes the reaper's `shutdown` safe.
func connectionChanged(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
                       _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                       _ change: MHD_ConnectionNotificationCode) {
    guard let core = core(cls) else { return }
    if change == .CONNECTION_NOTIFY_STARTED {
        core.connections.add(1, ordering: .relaxed)
        guard let connection, let socketContext else { return }
        let fd = registryd_mhd_connection_fd(connection)
        guard fd >= 0 else { return }
        let tracked = TrackedConnection(fd: fd)
        core.deadlines.accepted(tracked)
        socketContext.pointee = Unmanaged.passRetained(tracked).toOpaque()
        core.reaper.track(tracked)
    } else if change == .CONNECTION_NOTIFY_CLOSED {
        core.connections.subtract(1, ordering: .relaxed)
        guard let socketContext, let raw = socketContext.pointee else { return }
        socketContext.pointee = nil
        let tracked = Unmanaged<TrackedConnection>.fromOpaque(raw).takeRetainedValue()
        core.reaper.untrack(tracked)
    }
}
