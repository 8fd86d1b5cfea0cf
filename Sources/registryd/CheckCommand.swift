import Registry

/// `registryd check`: compares every index with its records; prints each
/// problem and exits 1 when there is any.
enum CheckCommand: OperatorCommand {
    static func run(_ store: LMDBRegistryStore, _ arguments: Arguments) throws -> Int32 {
        let problems = try store.check()
        for problem in problems { print(problem) }
        print(problems.isEmpty ? "ok: every index agrees with its records" : "\(problems.count) problem(s) found")
        return problems.isEmpty ? 0 : 1
    }
}
