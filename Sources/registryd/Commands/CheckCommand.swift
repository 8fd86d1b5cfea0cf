import Foundation
import RegistryCore
import RegistryLMDB

/// `registryd check`: compares every index with its records (PostgreSQL:
/// checks the registry's invariants); prints each problem and exits 1 when
/// there is any.
///
/// `registryd check --repair` (LMDB only) first rebuilds every index from
/// the records (`LMDBRegistryStore.repairIndexes`, in short steps a running
/// server's writes interleave with): one line per fix (the first
/// `fixLines`, then "... and N more"), a summary line with the counts; then
/// it checks again and exits 0 only when that check is clean. PostgreSQL
/// keeps its own indexes, so there is nothing of ours to rebuild: `--repair`
/// with `--store postgres` exits 2.
enum CheckCommand: OperatorCommand {
    static let help = CommandHelp(
        name: "check", synopsis: "[--repair] [--data-dir DIR]", tagline: "check (and repair) every index against its records",
        summary: """
            Reads every database of the registry in --data-dir in one snapshot and checks each
            index against its records (token owners, expiry entries, device-activity entries,
            activity counts, a token held by two records). Prints one line per problem; exit 0
            when consistent, 1 otherwise. Use it on a backup to check it.
            With --repair it first rebuilds every index from the records, in short write steps
            (at most 500 entries or about 4 ms each) that a running server's writes interleave
            with: missing entries are put back, wrong ones corrected, entries no record backs
            deleted, tokens whose device is gone removed, and a token held by two records kept
            by the one updated later. It prints one line per fix and a summary, then checks
            again: exit 0 only when that check is clean. Unreadable records are left alone.
            With --store postgres, PostgreSQL keeps its indexes itself: check reports what breaks
            the registry's invariants, and --repair is refused (exit 2).
            """,
        flags: ["repair"] + Flags.store,
        example: """
            registryd check --repair --data-dir /var/lib/registryd
            added owner entry for push token of "alice"/"d1"
            repair: 1 fix(es): owner entries added 1
            ok: every index agrees with its records
            """)

    static let fixLines = 100
    /// Problems listed at most.
    static let problemLines = 100

    static func checkSupported(_ settings: Settings, _ arguments: Arguments) throws(Arguments.Failure) {
        guard arguments.isSet("repair"), case .postgres = settings.backend else { return }
        throw Arguments.Failure(description: "--repair rebuilds the indexes of an LMDB registry; PostgreSQL keeps its indexes itself (run check without --repair: it reports what breaks the registry's invariants)")
    }

    static func run(_ store: any RegistryMaintenance, _ settings: Settings, _ arguments: Arguments) throws -> Int32 {
        let repairing = arguments.isSet("repair")
        if repairing {
            let progress = ProgressLine("repair", unit: .entries, total: nil)
            let repaired = try Blocking.result {
                try await store.repairIndexes(lineLimit: fixLines, progress: { done in progress.update(done) })
            }.get()
            progress.finish()
            // checkSupported refused --repair where the engine keeps its own indexes.
            guard let report = repaired else { return 2 }
            for line in report.lines { print(line) }
            if report.linesLeftOut > 0 { print("... and \(report.linesLeftOut) more") }
            print(report.summary)
        }
        let progress = ProgressLine("check", unit: .entries, total: nil)
        let problems = try Blocking.result {
            try await store.check(limit: problemLines, progress: { done in progress.update(done) })
        }.get()
        progress.finish()
        for problem in problems { print(problem) }
        if problems.isEmpty {
            switch settings.backend {
            case .lmdb: print("ok: every index agrees with its records")
            case .postgres: print("ok: the registry's invariants hold")
            }
        } else {
            print(repairing ? "\(problems.count) problem(s) remain after the repair" : "\(problems.count) problem(s) found")
        }
        return problems.isEmpty ? 0 : 1
    }
}
