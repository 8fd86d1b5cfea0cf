import Postgres
import Synchronization

/// The apps (`appId`s) the registry holds, in `registry_apps`, and the
/// app limit. An app is never removed, so a node may remember the apps it
/// has seen committed without going stale; one it has not seen is asked of
/// the database (another node may have added it).
final class PostgresAppCatalog: Sendable {
    let limit: Int
    private let known = Mutex<Set<[UInt8]>>([])

    init(limit: Int) { self.limit = limit }

    /// Whether any record of `appId` can exist.
    func exists(_ appId: String, _ connection: PostgresConnection) throws -> Bool {
        let name = Array(appId.utf8)
        if known.withLock({ $0.contains(name) }) { return true }
        let found = try connection.query("SELECT 1 FROM registry_apps WHERE app_id = $1", [.text(appId)]).rowCount == 1
        // Only what another transaction committed is remembered: an insert
        // of this transaction may still roll back.
        if found && connection.transactionStatus == .idle { known.withLock { _ = $0.insert(name) } }
        return found
    }

    /// A write that adds an app must run as SERIALIZABLE (`register` throws
    /// this otherwise, and the store runs the transaction again so).
    struct NeedsSerializable: Error {}

    /// Adds `appId` in the current transaction when it is new; a new app
    /// past `limit` is refused (a 400 naming `appId`). Only a SERIALIZABLE
    /// transaction adds one: there, two nodes adding the last allowed app
    /// at once cannot both commit (a count and an insert are what snapshot
    /// isolation lets two transactions both get wrong).
    func register(_ appId: String, _ connection: PostgresConnection, serializable: Bool) throws {
        let name = Array(appId.utf8)
        if known.withLock({ $0.contains(name) }) { return }
        let found = try connection.query("SELECT 1 FROM registry_apps WHERE app_id = $1", [.text(appId)]).rowCount == 1
        if found { return }
        guard serializable else { throw NeedsSerializable() }
        let count = try connection.query("SELECT count(*) FROM registry_apps").int64(0, 0) ?? 0
        guard count < limit else {
            throw RegistryError.invalidField(field: "appId",
                                             message: "names a new app, and this registry already holds its limit of \(limit) apps")
        }
        try connection.query("INSERT INTO registry_apps (app_id) VALUES ($1) ON CONFLICT DO NOTHING", [.text(appId)])
    }

    /// Remembers apps every record of a committed read named (they exist).
    func remember(_ appIds: some Sequence<String>) {
        known.withLock { known in for appId in appIds { known.insert(Array(appId.utf8)) } }
    }
}
