import Registry

/// `registryd backup --to DIR`: a consistent hot copy of the environment,
/// taken while a server may be writing.
enum BackupCommand: OperatorCommand {
    static func run(_ store: LMDBRegistryStore, _ arguments: Arguments) throws -> Int32 {
        guard let (target, _) = arguments.value("to") else {
            throw Arguments.Failure(description: "--to is required")
        }
        try store.backup(toDirectory: target)
        print("backup written to \(target)")
        return 0
    }
}
