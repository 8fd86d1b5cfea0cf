import Foundation
import Glibc

/// `serve`'s exclusive hold on its data directory: an `flock` on
/// `DIR/registryd.lock`, which holds the server's pid. Two servers on one
/// directory would be two writers and two sweepers, possibly with different
/// TTLs; the second one exits 2 naming the first one's pid instead.
///
/// The kernel drops the lock when the process ends, however it ends
/// (kill -9 included), so a stale file never blocks a restart. Operator
/// subcommands do not take it: they are meant to run beside the server.
/// Nor does `serve --store postgres`: its writers are transactions on a
/// database that many servers share by design, whatever data directory
/// holds their secrets.
final class DataDirectoryLock {
    private let fd: Int32

    private init(fd: Int32) { self.fd = fd }

    static func acquire(_ layout: DataDirectory) throws(Arguments.Failure) -> DataDirectoryLock {
        if mkdir(layout.path, 0o700) != 0 && errno != EEXIST {
            throw Arguments.Failure(description: "--data-dir: cannot create '\(layout.path)': \(String(cString: strerror(errno)))")
        }
        let fd = open(layout.lockFile, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw Arguments.Failure(description: "--data-dir: cannot open '\(layout.lockFile)': \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let busy = errno == EWOULDBLOCK
            let reason = String(cString: strerror(errno))
            let holder = busy ? Self.recordedPid(fd) : nil
            close(fd)
            guard busy else { throw Arguments.Failure(description: "--data-dir: cannot lock '\(layout.lockFile)': \(reason)") }
            throw Arguments.Failure(description: "--data-dir: '\(layout.path)' is served by registryd pid \(holder ?? "unknown") (it holds \(layout.lockFile)); one server per data directory")
        }
        let pid = Array("\(getpid())\n".utf8)
        guard ftruncate(fd, 0) == 0, pwrite(fd, pid, pid.count, 0) == pid.count else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Arguments.Failure(description: "--data-dir: cannot write '\(layout.lockFile)': \(reason)")
        }
        return DataDirectoryLock(fd: fd)
    }

    /// The pid the holder wrote, for the refusal message.
    private static func recordedPid(_ fd: Int32) -> String? {
        var bytes = [UInt8](repeating: 0, count: 32)
        let n = pread(fd, &bytes, bytes.count, 0)
        guard n > 0 else { return nil }
        let text = String(decoding: bytes[0..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    /// Releases the lock (the server has stopped writing).
    deinit { close(fd) }
}
