import Foundation
import Glibc

/// This process as other processes can recognise it: host name, pid, and
/// the kernel's start time of the pid (field 22 of `/proc/PID/stat`), so a
/// pid the kernel reused for another process is not taken for it.
package struct ProcessIdentity: Hashable, Sendable, CustomStringConvertible {
    package let host: String
    package let pid: Int32
    package let startTime: UInt64

    package init(host: String, pid: Int32, startTime: UInt64) {
        self.host = host
        self.pid = pid
        self.startTime = startTime
    }

    package static let current = ProcessIdentity(host: hostName(), pid: getpid(), startTime: startTime(of: getpid()) ?? 0)

    /// `gethostname` (no DNS lookup, unlike `ProcessInfo.hostName`).
    private static func hostName() -> String {
        var name = [CChar](repeating: 0, count: 256)
        guard gethostname(&name, name.count - 1) == 0 else { return "unknown host" }
        return String(cString: name)
    }

    package var description: String { "pid \(pid) on \(host)" }

    /// Whether this process still runs: only answerable on its own host
    /// (the LMDB store's processes share one; a PostgreSQL node says so by
    /// its heartbeat instead).
    package var isRunning: Bool { Self.startTime(of: pid) == startTime }

    /// The start time of `pid`, in clock ticks since boot; nil when no such process.
    package static func startTime(of pid: Int32) -> UInt64? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // After "pid (comm)" come fields 3…; the start time is field 22.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 19 ? UInt64(fields[19]) : nil
    }
}
