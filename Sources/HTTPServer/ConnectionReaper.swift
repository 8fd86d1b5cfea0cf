import Foundation
import Glibc
import Lifecycle
import Synchronization

/// The table of open connections and the thread that cuts those past their
/// deadline (`ConnectionDeadlines`).
///
/// Cutting is `shutdown(fd, SHUT_RDWR)`: libmicrohttpd then sees end of
/// stream on its next read, aborts the request and closes the connection
/// through its ordinary path (completion notice, per-IP count, CLOSED
/// notice), exactly as when a client hangs up; no answer is sent. The
/// shutdown happens under the table's lock, and a connection leaves the table
/// under that lock in its CLOSED notice, which libmicrohttpd 0.9.75 delivers
/// before it closes the socket (`MHD_cleanup_connections`, and the failure
/// path of `new_connection_process_`): so the descriptor shut down is always
/// still this connection's.
///
/// The table is touched twice per connection (STARTED, CLOSED), never per
/// request; a scan reads one atomic per connection, every `scanInterval`.
final class ConnectionReaper: Service {
    private let table = Mutex<[TrackedConnection]>([])
    private let cut = Atomic<Int>(0)
    private let thread: PeriodicThread

    init(scanInterval: Duration) {
        thread = PeriodicThread(name: "http-reaper", interval: scanInterval)
    }

    /// Connections cut at a deadline since start.
    var cutCount: Int { cut.load(ordering: .sequentiallyConsistent) }

    /// Connections in the table (open, from STARTED to CLOSED).
    var trackedCount: Int { table.withLock { $0.count } }

    func track(_ connection: TrackedConnection) {
        table.withLock { table in
            connection.slot.store(table.count, ordering: .relaxed)
            table.append(connection)
        }
    }

    /// Removes `connection`; after this returns the reaper never touches its socket.
    func untrack(_ connection: TrackedConnection) {
        table.withLock { table in
            let index = connection.slot.load(ordering: .relaxed)
            guard index >= 0, index < table.count, table[index] === connection else { return }
            let last = table.removeLast()
            if index < table.count {
                table[index] = last
                last.slot.store(index, ordering: .relaxed)
            }
            connection.slot.store(-1, ordering: .relaxed)
        }
    }

    /// Shuts down every connection whose deadline has passed. Each is
    /// counted before its shutdown, so the count already includes a cut
    /// its client has seen.
    func cutOverdue(now: Int64 = ConnectionDeadlines.now()) {
        table.withLock { table in
            for connection in table {
                let deadline = connection.currentDeadline
                guard deadline != 0, deadline <= now, connection.claimOverdue(deadline) else { continue }
                cut.add(1, ordering: .sequentiallyConsistent)
                shutdown(connection.fd, Int32(SHUT_RDWR))
            }
        }
    }

    var name: String { thread.name }

    /// Starts the scanning thread. Idempotent.
    func start() { thread.start { [weak self] in self?.cutOverdue() } }

    /// Wakes the thread and waits for it to end. Idempotent; safe before `start`.
    func stop() { thread.stop() }
}
