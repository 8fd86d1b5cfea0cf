import Foundation
import Glibc
import RegistryCore
import RegistryHTTP

/// `registryd import [--from FILE]`: writes `export`'s JSON lines (stdin by
/// default) into the registry `--store` names, creating it when there is
/// none, so export → import moves a registry to a new machine, or between
/// LMDB and PostgreSQL.
///
/// Lines are read as a stream and written in batches of `batchSize`
/// records, one group commit each, so an export larger than memory
/// imports. Every line is checked with the API's rules first; a bad line is
/// reported by number and skipped, the good ones are imported, and the exit
/// status is 1 at the end when any line was bad. A record replaces the one
/// with the same key, timestamps and sequence kept, so running the same
/// import twice changes nothing the second time.
enum ImportCommand: OperatorCommand {
    static let help = CommandHelp(
        name: "import", synopsis: "[--from FILE] [--data-dir DIR]", tagline: "write export lines into a registry",
        summary: """
            Reads `registryd export` lines (--from FILE, default stdin) and writes them into the
            registry in --data-dir, creating it when the directory is absent or empty (with
            --store postgres: into the database --postgres-url names, its tables created when
            missing); servers may run on it meanwhile. `export` from one backend piped into
            `import` on the other moves a registry between LMDB and PostgreSQL. Every field is
            checked with the API's rules; a bad line is reported on stderr by its number and
            skipped, and the exit status is 1 at the end if any line was bad (0 otherwise). A
            record replaces the one with the same user and device (timestamps and sequence as
            exported; a token another record holds moves to the imported one), so importing the
            same file twice changes nothing the second time.
            """,
        flags: ["from"] + Flags.store,
        example: """
            registryd export --data-dir /var/lib/registryd > records.jsonl
            registryd import --data-dir /srv/new-registry --from records.jsonl
            imported 100000 records from 100000 lines
            """)

    static var opening: Settings.StoreOpening { .creatingIfMissing }

    /// Records per group commit.
    static let batchSize = 500

    static func run(_ store: any RegistryMaintenance, _ settings: Settings, _ arguments: Arguments) throws -> Int32 {
        var fd = STDIN_FILENO
        var total: Int?
        if let (path, source) = arguments.value("from") {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                throw Arguments.Failure(description: "\(source): cannot read '\(path)': \(String(cString: strerror(errno)))")
            }
            total = LineReader.countLines(path)
        }
        defer { if fd != STDIN_FILENO { close(fd) } }

        let progress = ProgressLine("import", unit: .records, total: total)
        var reader = LineReader(fd: fd)
        var batch: [ExportedRecord] = []
        var lines = 0, written = 0, bad = 0
        func flush() throws {
            guard !batch.isEmpty else { return }
            let records = batch
            written += try Blocking.result { try await store.importRecords(records) }.get()
            batch.removeAll(keepingCapacity: true)
            progress.update(lines)
        }
        while let line = try reader.next() {
            lines += 1
            guard !line.isEmpty else { continue }
            do {
                batch.append(try ExportFormat.decode(line, line: lines))
            } catch {
                bad += 1
                progress.finish()
                Command.printError(error is ExportFormat.LineError ? "\(error)" : "line \(lines): \(error)")
            }
            if batch.count == batchSize { try flush() }
        }
        try flush()
        progress.finish()
        let summary = "imported \(written) records from \(lines) lines"
        if bad > 0 {
            Command.printError("\(summary); \(bad) bad line\(bad == 1 ? "" : "s") skipped (listed above)")
            return 1
        }
        print(summary)
        return 0
    }
}

/// Lines of a file descriptor, read in 1 MiB chunks.
struct LineReader {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false

    init(fd: Int32) { self.fd = fd }

    /// The next line without its newline; `nil` at the end.
    mutating func next() throws -> [UInt8]? {
        while true {
            if let newline = buffer[start...].firstIndex(of: 0x0A) {
                defer { start = newline + 1 }
                return Array(buffer[start..<newline])
            }
            if atEnd {
                guard start < buffer.count else { return nil }
                defer { start = buffer.count }
                return Array(buffer[start...])
            }
            buffer.removeFirst(start)
            start = 0
            try fill()
        }
    }

    private mutating func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = read(fd, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw Arguments.Failure(description: "--from: read failed: \(String(cString: strerror(errno)))") }
            if n == 0 { atEnd = true } else { buffer.append(contentsOf: chunk[0..<n]) }
            return
        }
    }

    /// The number of lines in a regular file (for the progress line's time
    /// left); `nil` for a pipe, which can be read only once.
    static func countLines(_ path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var count = 0, last: UInt8 = 0x0A
        while true {
            let n = read(fd, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            for byte in chunk[0..<n] where byte == 0x0A { count += 1 }
            last = chunk[n - 1]
        }
        return last == 0x0A ? count : count + 1
    }
}
