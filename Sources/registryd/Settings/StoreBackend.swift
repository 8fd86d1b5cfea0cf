import JSON

/// Where the registry lives (`--store`): an LMDB environment in the data
/// directory, served by one process at a time; or a PostgreSQL database that
/// any number of `registryd` nodes share. Either way the data directory
/// holds the generated secrets (token keys, JWT secret, internal API key).
enum StoreBackend: Sendable {
    case lmdb
    /// `--postgres-url` and `--postgres-pool-size` (`nil`: the store's default).
    case postgres(url: ConnectionString, poolSize: Int?)

    /// A `--postgres-url` with no `--store` at all is refused rather than
    /// ignored: a node meant to join the shared database would otherwise
    /// serve a registry of its own. An explicit `--store lmdb` ignores it.
    init(_ arguments: Arguments) throws(Arguments.Failure) {
        var poolSize: Int?
        if let (value, source) = arguments.value("postgres-pool-size") {
            guard let n = ValueParsing.positiveInt(value, max: 200) else {
                throw Arguments.Failure(description: "\(source) must be a whole number from 1 to 200")
            }
            poolSize = n
        }
        let url = arguments.value("postgres-url")
        guard let (kind, kindSource) = arguments.value("store") else {
            if let (_, source) = url {
                throw Arguments.Failure(description: "\(source) is set but --store is not: give --store postgres to use it (or --store lmdb to ignore it)")
            }
            self = .lmdb
            return
        }
        switch kind {
        case "lmdb":
            self = .lmdb
        case "postgres":
            guard let (text, source) = url else {
                throw Arguments.Failure(description: "--postgres-url is required with \(kindSource) postgres (a libpq connection string or a postgresql:// URI)")
            }
            let connectionString = ConnectionString(text)
            if let malformation = connectionString.malformation {
                throw Arguments.Failure(description: "\(source) \(malformation), got '\(connectionString.redacted)'")
            }
            self = .postgres(url: connectionString, poolSize: poolSize)
        default:
            throw Arguments.Failure(description: "\(kindSource) must be lmdb or postgres, got '\(kind)'")
        }
    }

    /// `lmdb` or `postgres`, as `--store` names it.
    /// LMDB: one process holds the registry (the data-directory lock), so
    /// whatever it finds claimed at start was claimed by a process that died.
    var isSingleProcess: Bool {
        if case .lmdb = self { return true }
        return false
    }

    var name: String {
        switch self {
        case .lmdb: "lmdb"
        case .postgres: "postgres"
        }
    }

    /// What a log line says of the store: its kind, and the URL without its password.
    var logFields: [(String, JSONWriter.Value)] {
        switch self {
        case .lmdb: [("store", .string(name))]
        case .postgres(let url, _): [("store", .string(name)), ("postgresURL", .string(url.redacted))]
        }
    }
}
