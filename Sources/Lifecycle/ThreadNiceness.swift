import CGlibcExtras

/// The nice value of a thread registryd starts for work that must yield
/// to the API under CPU contention (the HTTP/2 clients' threads, the
/// delivery sender's). Linux keeps a nice value per thread, not per
/// process, so each such thread sets its own as it starts.
public enum ThreadNiceness {
    /// Gives the calling thread `niceness`; 0 leaves it the process's. A
    /// value the process may not take (below its `RLIMIT_NICE` without
    /// privilege) is ignored: the thread then keeps the process's, which
    /// only costs the API its head start.
    public static func apply(_ niceness: Int32) {
        if niceness != 0 { _ = registryd_set_thread_niceness(niceness) }
    }
}
