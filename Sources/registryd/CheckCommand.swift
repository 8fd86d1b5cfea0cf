import Registry

/// `registryd check`: compares every index with its records; prints each
/// problem and exits 1 when there is any.
enum CheckCommand: OperatorCommand {
    static let help = CommandHelp(
        name: "check", synopsis: "[--data-dir DIR]", tagline: "check every index against its records",
        summary: """
            Reads every database of the registry in --data-dir in one snapshot and checks each
            index against its records (token owners, expiry entries, device-activity entries,
            activity counts). Prints one line per problem; exit 0 when consistent, 1 otherwise.
            Use it on a backup to check it.
            """,
        flags: Flags.store,
        example: """
            registryd check --data-dir /var/lib/registryd
            ok: every index agrees with its records
            """)

    static func run(_ store: LMDBRegistryStore, _ settings: Settings, _ arguments: Arguments) throws -> Int32 {
        let problems = try store.check()
        for problem in problems { print(problem) }
        print(problems.isEmpty ? "ok: every index agrees with its records" : "\(problems.count) problem(s) found")
        return problems.isEmpty ? 0 : 1
    }
}
