import Foundation
import Registry

/// `registryd check`: compares every index with its records; prints each
/// problem and exits 1 when there is any.
///
/// `registryd check --repair` first rebuilds every index from the records
/// (`LMDBRegistryStore.repairIndexes`, in short steps a running server's
/// writes interleave with): one line per fix (the first `fixLines`, then
/// "... and N more"), a summary line with the counts; then it checks again
/// and exits 0 only when that check is clean. Progress goes to stderr.
enum CheckCommand: OperatorCommand {
    static let fixLines = 100

    static func run(_ store: LMDBRegistryStore, _ arguments: Arguments) throws -> Int32 {
        let repairing = arguments.isSet("repair")
        if repairing {
            let report = try Blocking.result {
                var lastShown = ContinuousClock.now
                return try await store.repairIndexes(lineLimit: fixLines, progress: { done in
                    guard ContinuousClock.now - lastShown >= .seconds(2) else { return }
                    lastShown = .now
                    FileHandle.standardError.write(Data("repair: \(done) entries visited\n".utf8))
                })
            }.get()
            for line in report.lines { print(line) }
            if report.linesLeftOut > 0 { print("... and \(report.linesLeftOut) more") }
            print(report.summary)
        }
        let problems = try store.check()
        for problem in problems { print(problem) }
        if problems.isEmpty {
            print("ok: every index agrees with its records")
        } else {
            print(repairing ? "\(problems.count) problem(s) remain after the repair" : "\(problems.count) problem(s) found")
        }
        return problems.isEmpty ? 0 : 1
    }
}
