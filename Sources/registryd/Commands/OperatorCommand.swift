import RegistryCore

/// An operator subcommand (`stats`, `sweep`, `backup`, `check`, `export`,
/// `import`): work on the registry `--store` names, also while servers run
/// on it (LMDB serialises writers across processes and readers never block;
/// PostgreSQL is shared by design), so none of them takes `serve`'s
/// data-directory lock.
protocol OperatorCommand: Subcommand {
    /// `.existing` for every command but `import`, which may start a registry.
    static var opening: Settings.StoreOpening { get }
    /// Refuses (exit 2, before the store is opened) what the command cannot
    /// do on the chosen backend; nothing by default.
    static func checkSupported(_ settings: Settings, _ arguments: Arguments) throws(Arguments.Failure)
    /// The command's work on the open store; returns the exit status.
    static func run(_ store: any RegistryMaintenance, _ settings: Settings, _ arguments: Arguments) throws -> Int32
    /// Work done without opening the store (none by default): its exit
    /// status, or nil to open the store and `run` as usual.
    static func runWithoutStore(_ settings: Settings, _ arguments: Arguments) throws -> Int32?
}

extension OperatorCommand {
    static var opening: Settings.StoreOpening { .existing }

    static func checkSupported(_ settings: Settings, _ arguments: Arguments) throws(Arguments.Failure) {}

    static func runWithoutStore(_ settings: Settings, _ arguments: Arguments) throws -> Int32? { nil }

    static func run(_ arguments: Arguments) throws -> Int32 {
        let settings = try Settings(arguments)
        try checkSupported(settings, arguments)
        if let status = try runWithoutStore(settings, arguments) { return status }
        let store = try settings.openStore(opening)
        defer { store.shutdown() }
        return try run(store, settings, arguments)
    }
}
