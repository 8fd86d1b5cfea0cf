import CMicroHTTPD

// libmicrohttpd's callbacks. They are plain global functions in a file that
// is not main.swift: a closure there would be main-actor isolated and trap
// when a worker thread calls it (DESIGN.md, C-interop pitfalls). `cls` is
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
    let state = RequestState(target: uri.map { String(cString: $0) } ?? "/")
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
    Unmanaged<RequestState>.fromOpaque(raw).release()
    core.liveRequests.subtract(1, ordering: .relaxed)
}

/// MHD_OPTION_NOTIFY_CONNECTION: counts open connections.
func connectionChanged(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
                       _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                       _ change: MHD_ConnectionNotificationCode) {
    guard let core = core(cls) else { return }
    if change == .CONNECTION_NOTIFY_STARTED {
        core.connections.add(1, ordering: .relaxed)
    } else if change == .CONNECTION_NOTIFY_CLOSED {
        core.connections.subtract(1, ordering: .relaxed)
    }
}
