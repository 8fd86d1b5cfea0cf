import Registry

/// An operator subcommand (`stats`, `sweep`, `backup`, `check`, `export`,
/// `import`): work on a data directory, also while a server runs on it
/// (LMDB serialises writers across processes, and readers never block), so
/// none of them takes `serve`'s data-directory lock.
protocol OperatorCommand: Subcommand {
    /// `.existing` for every command but `import`, which may start a registry.
    static var opening: Settings.StoreOpening { get }
    /// The command's work on the open store; returns the exit status.
    static func run(_ store: any RegistryMaintenance, _ settings: Settings, _ arguments: Arguments) throws -> Int32
}

extension OperatorCommand {
    static var opening: Settings.StoreOpening { .existing }

    static func run(_ arguments: Arguments) throws -> Int32 {
        let settings = try Settings(arguments)
        let store = try settings.openStore(opening)
        defer { store.shutdown() }
        return try run(store, settings, arguments)
    }
}
