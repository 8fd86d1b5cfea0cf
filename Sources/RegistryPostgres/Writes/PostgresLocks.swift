import RegistryCore
import Postgres

/// The advisory lock keys of one registry, derived from its schema name so
/// that registries in two schemas of one database never share a lock.
struct PostgresLocks: Sendable {
    /// One sweep at a time across nodes (session lock).
    let sweep: Int64
    /// One token key rotation at a time across nodes (session lock).
    let rotation: Int64
    /// Writes hold it shared (session lock, from before BEGIN to after
    /// COMMIT); a rotation's announcement holds it exclusive
    /// (transaction lock): so no write that started before the
    /// announcement commits after it, and every write after it sees it.
    let keyBarrier: Int64
    /// The migration that binds sealed values to their record (transaction lock).
    let binding: Int64
    private let schema: String

    init(schema: String) {
        self.schema = schema
        sweep = PostgresConnection.advisoryKey("registryd.sweep." + schema)
        rotation = PostgresConnection.advisoryKey("registryd.rotation." + schema)
        keyBarrier = PostgresConnection.advisoryKey("registryd.keys." + schema)
        binding = PostgresConnection.advisoryKey("registryd.bind." + schema)
    }

    /// A user's writes run one at a time across nodes (session lock).
    func user(_ userId: String) -> Int64 { PostgresConnection.advisoryKey("registryd.user." + schema + "." + userId) }
}
