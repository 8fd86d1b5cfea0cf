import Registry

/// An operator subcommand (`stats`, `sweep`, `backup`, `check`, `export`,
/// `import`): work on an existing data directory, also while a server runs on
/// it (LMDB serialises writers across processes, and readers never block).
protocol OperatorCommand {
    /// The command's work on the open store; returns the exit status.
    static func run(_ store: LMDBRegistryStore, _ arguments: Arguments) throws -> Int32
}

extension OperatorCommand {
    /// Every operator command accepts every operator flag, as when they were
    /// one command, so a script may pass the same flags to each.
    static func run(_ rawArguments: [String]) throws -> Int32 {
        let arguments = try Arguments(rawArguments, valued: Settings.storeFlags.union(["to", "from"]),
                                      switches: ["json", "dry-run", "repair"])
        let settings = try Settings(arguments)
        let store = try settings.openStore(.existing)
        defer { store.shutdown() }
        return try run(store, arguments)
    }
}
