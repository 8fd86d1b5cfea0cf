import Synchronization

/// One open client connection as the `ConnectionReaper` sees it: its socket
/// and the instant by which what it is sending (a request head or body) must
/// be complete.
///
/// Created on libmicrohttpd's STARTED connection notice and held (retained)
/// in the connection's socket context until its CLOSED notice. Only the
/// connection's own server thread sets `deadline` (libmicrohttpd serialises
/// a connection's callbacks), so each request costs a few relaxed atomic
/// stores and no lock; the reaper only reads it and clears it when it cuts.
final class TrackedConnection: Sendable {
    /// The socket. libmicrohttpd closes it only after the CLOSED notice has
    /// returned, and that notice removes this record from the reaper's table
    /// under the table's lock: the reaper, which touches `fd` only under that
    /// lock, never sees a closed (or reused) descriptor.
    let fd: Int32
    /// Index in the reaper's table; written only under the table's lock.
    let slot = Atomic<Int>(-1)
    /// Milliseconds on `ConnectionDeadlines.now()`; 0 = none.
    private let deadline = Atomic<Int64>(0)

    init(fd: Int32) {
        self.fd = fd
    }

    var currentDeadline: Int64 { deadline.load(ordering: .relaxed) }

    /// Sets the deadline (0 = none).
    func expect(by instant: Int64) {
        deadline.store(instant, ordering: .relaxed)
    }

    /// Moves the deadline earlier to `instant` if it is later or unset.
    func tighten(to instant: Int64) {
        let current = deadline.load(ordering: .relaxed)
        if current == 0 || instant < current { deadline.store(instant, ordering: .relaxed) }
    }

    /// The reaper's claim on an overdue connection: true exactly once per
    /// missed deadline, and false when the server thread has moved the
    /// deadline since the reaper read `observed` (the client made it after all).
    func claimOverdue(_ observed: Int64) -> Bool {
        deadline.compareExchange(expected: observed, desired: 0, ordering: .relaxed).exchanged
    }
}
