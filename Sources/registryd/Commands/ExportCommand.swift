import Foundation
import RegistryCore
import RegistryHTTP

/// `registryd export > records.jsonl`: every record as one JSON line on
/// stdout (tokens included: it is an operator tool), the count on stderr so
/// it stays out of the file.
enum ExportCommand: OperatorCommand {
    static let help = CommandHelp(
        name: "export", synopsis: "[--data-dir DIR] > records.jsonl", tagline: "write every record as JSON lines",
        summary: """
            Writes every device (with its push, push-to-start and activity tokens) and every
            tombstone of one consistent snapshot to stdout, one JSON object per line, with
            epoch-millisecond timestamps, so `import` reproduces them exactly. The tokens are
            in PLAINTEXT: guard the file like the data directory, and delete it when done.
            Piped into `import` on the other backend, it moves a registry between LMDB and
            PostgreSQL (either way).
            """,
        flags: Flags.store,
        example: """
            registryd export --data-dir /var/lib/registryd > records.jsonl
            exported 100000 records
            registryd export --data-dir /var/lib/registryd \
              | registryd import --store postgres --postgres-url 'postgresql://registry@db1/registry'
            imported 100000 records from 100000 lines
            """)

    static func run(_ store: any RegistryMaintenance, _ settings: Settings, _ arguments: Arguments) throws -> Int32 {
        let stats = try Blocking.result { try await store.stats() }.get()
        let progress = ProgressLine("export", unit: .records, total: stats.devices + stats.tombstones)
        let count = try Blocking.result {
            var count = 0
            try await store.export { record in
                var line = ExportFormat.encode(record)
                line.append(0x0A)
                FileHandle.standardOutput.write(Data(line))
                count += 1
                progress.update(count)
            }
            return count
        }.get()
        progress.finish()
        FileHandle.standardError.write(Data("exported \(count) records\n".utf8))
        return 0
    }
}
