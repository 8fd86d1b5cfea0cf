import RegistryCore
import Postgres
import Synchronization

/// The apps (`appId`s) the registry holds, in `registry_apps` (which the
/// records' foreign keys name). Every declared app is put there when the
/// store opens, so a caller's write never adds one: it may name only a
/// declared app (`DeclaredApps`); a restoring write (import) adds the app
/// its records name. An app is never removed, so a node may remember the
/// apps it has seen committed without going stale; one it has not seen is
/// asked of the database (another node may have added it).
final class PostgresAppCatalog: Sendable {
    /// The apps a caller's write may name.
    let declared: DeclaredApps
    private let known = Mutex<Set<[UInt8]>>([])

    init(declared: DeclaredApps) { self.declared = declared }

    /// Puts every declared app into `registry_apps` (nodes starting together
    /// insert the same rows; the conflict clause lets both through).
    func storeDeclared(_ connection: PostgresConnection) throws {
        try connection.query("INSERT INTO registry_apps (app_id) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING",
                             [PostgresRows.textArray(declared.ids)])
        remember(declared.ids)
    }

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

    /// Makes sure `appId` is in `registry_apps` before a record names it. A
    /// caller's write (`restoring` false) may name only a declared app (a
    /// 400 naming `appId` otherwise, stored or not), which the store put
    /// there at open; a restoring write adds a new one in its transaction.
    func register(_ appId: String, _ connection: PostgresConnection, restoring: Bool) throws {
        guard restoring || declared.contains(appId) else { throw RegistryError.undeclaredApp }
        if known.withLock({ $0.contains(Array(appId.utf8)) }) { return }
        try connection.queryLater("INSERT INTO registry_apps (app_id) VALUES ($1) ON CONFLICT DO NOTHING", [.text(appId)])
    }

    /// Every app in `registry_apps`, in byte order.
    func all(_ connection: PostgresConnection) throws -> [String] {
        let r = try connection.query("SELECT app_id FROM registry_apps ORDER BY app_id")
        return try (0..<r.rowCount).map { try r.string($0, 0) ?? "" }
    }

    /// Remembers apps every record of a committed read named (they exist).
    func remember(_ appIds: some Sequence<String>) {
        known.withLock { known in for appId in appIds { known.insert(Array(appId.utf8)) } }
    }
}
