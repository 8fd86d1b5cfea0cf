import Glibc

/// Fits the connection limit to the process's file descriptor limit.
///
/// Each connection holds one descriptor. A connection limit above what
/// RLIMIT_NOFILE allows would make `accept` fail with EMFILE, which
/// libmicrohttpd answers by pausing accepts (and, at its first connection,
/// by busy-waiting); so the server raises its soft limit toward the hard
/// one when needed (the hard limit is the administrator's ceiling, e.g.
/// systemd's `LimitNOFILE=`), then lowers the connection limit to what fits.
enum FileDescriptorBudget {
    /// Descriptors kept for everything else: the listening socket, one epoll
    /// set and one wake-up channel per server thread, the store's files,
    /// standard streams, the occasional file a handler opens.
    static let reserve = 128

    /// The connections that fit, at most `wanted` and at least 1. May raise
    /// the process's soft RLIMIT_NOFILE (never above the hard limit).
    static func fit(_ wanted: Int) -> Int {
        let wanted = max(1, wanted)
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return wanted }
        let needed = rlim_t(wanted + reserve)
        if limit.rlim_cur != rlim_t.max, limit.rlim_cur < needed {
            var raised = limit
            raised.rlim_cur = limit.rlim_max == rlim_t.max ? needed : min(needed, limit.rlim_max)
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        guard limit.rlim_cur != rlim_t.max else { return wanted }
        return max(1, min(wanted, Int(clamping: limit.rlim_cur) - reserve))
    }
}
