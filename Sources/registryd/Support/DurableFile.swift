import Glibc

/// Small files written so that a crash leaves either the old state or the
/// whole new file: write a temporary file, fsync it, put it in place, fsync
/// the folder. Used for generated secrets and backup manifests and secrets.
enum DurableFile {
    /// Writes `bytes` to a new file `path` (mode `mode`, whatever the umask) and fsyncs it.
    static func writeSynced(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws(Arguments.Failure) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw failure("cannot create", path) }
        defer { close(fd) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw failure("cannot write", path) }
            written += n
        }
        guard fchmod(fd, mode) == 0, fsync(fd) == 0 else { throw failure("cannot write", path) }
    }

    /// `writeSynced` to a temporary name, then renamed over `path`: readers
    /// see the old file or the whole new one.
    static func replace(_ path: String, with bytes: [UInt8], mode: mode_t = 0o600) throws(Arguments.Failure) {
        let temporary = path + ".tmp-\(getpid())"
        try writeSynced(bytes, to: temporary, mode: mode)
        guard rename(temporary, path) == 0 else {
            let failed = failure("cannot rename into", path)
            unlink(temporary)
            throw failed
        }
        try syncDirectory(containing: path)
    }

    /// fsyncs a folder, so entries created or renamed in it survive a crash.
    static func syncDirectory(_ directory: String) throws(Arguments.Failure) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("cannot sync", directory) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw failure("cannot sync", directory) }
    }

    static func syncDirectory(containing path: String) throws(Arguments.Failure) {
        let parent = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        try syncDirectory(parent.isEmpty ? "/" : parent)
    }

    /// fsyncs an existing file (one another library wrote, such as LMDB's copy).
    static func syncFile(_ path: String) throws(Arguments.Failure) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("cannot open", path) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw failure("cannot sync", path) }
    }

    /// The whole file, read with plain POSIX calls (small files: keys, manifests).
    static func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = Glibc.read(fd, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return nil }
            if n == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<n])
        }
    }

    private static func failure(_ what: String, _ path: String) -> Arguments.Failure {
        Arguments.Failure(description: "\(what) '\(path)': \(String(cString: strerror(errno)))")
    }
}
