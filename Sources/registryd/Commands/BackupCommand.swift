import Foundation
import Glibc
import JSON
import RegistryCore
import RegistryLMDB
import RegistryHTTP
import Synchronization

/// `registryd backup --to DIR [--with-secrets]`: a consistent hot copy,
/// taken while a server may be writing, laid out as a data directory
/// (`DataDirectory`), so `serve --data-dir DIR` and every subcommand take
/// it as it is.
///
/// The copy is LMDB's compacting copy of one read snapshot. Its manifest
/// (`backup.json`) holds counts read back from the copy itself, not from the
/// live store, which may have moved on while copying.
///
/// LMDB only: a PostgreSQL registry is backed up with PostgreSQL's own tools
/// (`pg_basebackup` with WAL archiving for point-in-time recovery,
/// `pg_dump`), which know its replication and transactions; `export` piped
/// into `import --data-dir` gives an LMDB copy of it when one is wanted.
enum BackupCommand: Subcommand {
    static let help = CommandHelp(
        name: "backup", synopsis: "--to DIR [--with-secrets] [--data-dir DIR]", tagline: "write a restorable hot copy",
        summary: """
            Writes a consistent, compacted copy of the registry in --data-dir into --to DIR, which
            must be absent or empty, while a server may be running: DIR/lmdb/data.mdb (0600),
            DIR/backup.json (when, schema version, counts). DIR is a data directory: restore by
            stopping the server and serving (or moving) DIR; check it with
            `registryd check --data-dir DIR`. The copy holds every token: keep it like the data
            directory. Tokens in it are sealed: without the token keys (DIR/secrets/token-keys or
            --token-key-file) it discloses no token and cannot be served. Secrets (DIR/secrets:
            the token keys, the generated JWT secret, internal API key and operator key) are copied
            only with --with-secrets; without them, restore with the old key files (--token-key-file,
            --jwt-hs256-secret-file, --internal-api-key-file, --operator-key-file). With them, the
            backup alone discloses every token and lets its holder mint device JWTs and call the
            internal API: store it where only operators can read it. Key files given by flags
            are never copied.
            LMDB only: back up a PostgreSQL registry (--store postgres) with pg_basebackup or
            pg_dump, or copy it into an LMDB data directory with export piped into import.
            """,
        flags: ["to", "with-secrets"] + Flags.store,
        example: """
            registryd backup --data-dir /var/lib/registryd --to /backups/registry-2026-12-03
            backup written to /backups/registry-2026-12-03: 100000 devices, 0 tombstones, 122.4 MiB (secrets not copied)
            """)

    /// Opens the store itself (not through `OperatorCommand`): it needs the LMDB store's copy.
    static func run(_ arguments: Arguments) throws -> Int32 {
        let settings = try Settings(arguments)
        if case .postgres = settings.backend {
            throw Arguments.Failure(description: "--store postgres: backup copies an LMDB registry; back up PostgreSQL with pg_basebackup (with WAL archiving) or pg_dump, or write an LMDB copy with 'registryd export --store postgres … | registryd import --data-dir DIR'")
        }
        guard let (path, source) = arguments.value("to") else {
            throw Arguments.Failure(description: "--to is required")
        }
        guard !path.isEmpty else { throw Arguments.Failure(description: "\(source) must not be empty") }
        let store = try settings.openLMDB(.existing, directory: settings.layout.lmdb)
        defer { store.shutdown() }
        let target = DataDirectory(path: path)
        try requireAbsentOrEmpty(target.path, source: source)
        try makePrivateDirectory(target.path)

        let expectedBytes = try store.stats().usedBytes
        let progress = ProgressLine("backup", unit: .bytes, total: expectedBytes)
        let copied = target.lmdb + "/data.mdb"
        try withPolledFileSize(copied, progress) {
            try store.backup(toDirectory: target.lmdb)
        }
        progress.finish()
        try DurableFile.syncFile(copied)
        try DurableFile.syncDirectory(target.lmdb)

        let withSecrets = arguments.isSet("with-secrets")
        let secrets = withSecrets ? try copySecrets(from: settings.layout, to: target) : []
        let stats = try statsOfCopy(target, settings)
        try writeManifest(target, stats: stats, source: settings.layout, secrets: secrets)
        try DurableFile.syncDirectory(target.path)

        let size = String(format: "%.1f MiB", Double(fileSize(copied) ?? 0) / 1_048_576)
        let secretsNote = withSecrets ? "secrets copied: \(secrets.isEmpty ? "none found" : secrets.joined(separator: ", "))"
                                      : "secrets not copied"
        print("backup written to \(target.path): \(stats.devices) devices, \(stats.tombstones) tombstones, \(size) (\(secretsNote))")
        return 0
    }

    private static func requireAbsentOrEmpty(_ path: String, source: String) throws(Arguments.Failure) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return }
        guard isDirectory.boolValue else {
            throw Arguments.Failure(description: "\(source): '\(path)' is a file; a backup goes into an absent or empty directory")
        }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? ["?"]
        guard entries.isEmpty else {
            throw Arguments.Failure(description: "\(source): '\(path)' is not empty; a backup goes into an absent or empty directory")
        }
    }

    private static func makePrivateDirectory(_ path: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard chmod(path, 0o700) == 0 else { throw BackupError.permissions(path: path, errno: errno) }
    }

    /// Runs `body` (LMDB's copy, one blocking call) while a thread reports
    /// the size the copy has reached.
    private static func withPolledFileSize(_ path: String, _ progress: ProgressLine, _ body: () throws -> Void) rethrows {
        let done = Atomic<Bool>(false)
        let poller = Thread {
            while !done.load(ordering: .acquiring) {
                if let size = fileSize(path) { progress.update(size) }
                usleep(100_000)
            }
        }
        poller.start()
        defer { done.store(true, ordering: .releasing) }
        try body()
    }

    private static func fileSize(_ path: String) -> Int? {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : nil
    }

    /// Copies the generated secrets (every regular file in `DIR/secrets`),
    /// 0600 in a 0700 folder; returns their names.
    private static func copySecrets(from source: DataDirectory, to target: DataDirectory) throws -> [String] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: source.secrets)) ?? [])
            .filter { !$0.contains(".tmp-") }.sorted()
        guard !names.isEmpty else { return [] }
        try makePrivateDirectory(target.secrets)
        var copied: [String] = []
        for name in names {
            var info = stat()
            guard stat(source.secrets + "/" + name, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG,
                  let bytes = DurableFile.read(source.secrets + "/" + name) else { continue }
            try DurableFile.writeSynced(bytes, to: target.secrets + "/" + name)
            copied.append(name)
        }
        try DurableFile.syncDirectory(target.secrets)
        return copied
    }

    /// Opens the copy as `serve` would and counts what it holds.
    private static func statsOfCopy(_ target: DataDirectory, _ settings: Settings) throws -> StoreStats {
        let copy = try settings.openLMDB(.existing, directory: target.lmdb)
        defer { copy.shutdown() }
        return try copy.stats()
    }

    private static func writeManifest(_ target: DataDirectory, stats: StoreStats, source: DataDirectory,
                                      secrets: [String]) throws {
        let sourcePath = URL(fileURLWithPath: source.path).standardizedFileURL.path
        let document = JSONWriter.Value.object([
            ("format", .string("registryd-backup")),
            ("createdAt", .string(RFC3339.format(SystemClock().now()))),
            ("schemaVersion", .uint(LMDBRegistryStore.schemaVersion)),
            ("source", .string(sourcePath)),
            ("secretsIncluded", .array(secrets.map { .string($0) })),
            ("stats", StatsDocument.stats(stats)),
        ])
        var bytes = JSONWriter.encode(document)
        bytes.append(0x0A)
        try DurableFile.replace(target.backupManifest, with: bytes)
    }
}
