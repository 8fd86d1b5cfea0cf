import RegistryCore
import Foundation
import LMDB

/// The named databases of one registry environment, opened once at start.
///
/// | database | key | value |
/// | --- | --- | --- |
/// | v3.devices | (user, app code, device) | DeviceValue |
/// | v3.pushTokens, v3.pushToStart | (user, app code, device) | TokenValue (sealed) |
/// | v3.activityTokens | (activity, user, app code, device) | TokenValue (sealed) |
/// | v3.deviceActivities | (user, app code, device, activity) | empty |
/// | v3.tokenOwners | HMAC-SHA-256(index key, token) + kind | TokenHolder |
/// | v3.ownerCleanup | counter (8 bytes, big-endian) | a tokenOwners key the sweep left (`OwnerCleanup`) |
/// | v3.expiry | (kind, hour bucket, record key) | empty |
/// | v3.tombstones | (user, app code, device) | TombstoneValue |
/// | v3.history | (user, time, counter) | HistoryValue |
/// | apps | appId | its code (`AppCatalog`) |
/// | meta | name | schema version, cursor secret, lastSweepAt, index key check |
///
/// Schema 3 put its databases under new names (`v3.`) so that the
/// migration from schema 2 (`SchemaMigration`) moves records from the old
/// databases into the new ones in bounded steps, each old entry deleted as
/// its new form is written: a half-done migration is two disjoint halves,
/// never one database holding both key layouts.
package struct Schema: Sendable {
    /// Bumped when a stored encoding changes; checked at open, where
    /// `SchemaMigration` brings an older environment up to it.
    /// 2: device values carry `activityCount`.
    /// 3: tokens sealed, owner index keyed by HMAC, app families, history.
    /// 4: sealed values bound to their slot (`TokenSlot`), not only their kind.
    /// 5: the sweep leaves the owner entries of what it deletes, logged in
    /// `ownerCleanup`, for a pass in key order (`OwnerCleanup`); an older
    /// `check` would call them damage. Nothing to migrate.
    /// 6: notifications may hold an FCM body and deliveries a message id
    /// (their values' version 2); version 1 values are read as they are,
    /// so nothing to migrate, but an older build would refuse the new values.
    /// 7: the delivery queue's `due` keys lead with the priority's rank, and
    /// notifications carry a cancelled flag (their values' version 3).
    package static let version: UInt64 = 7

    package let devices: Database
    package let pushTokens: Database
    package let pushToStart: Database
    package let activityTokens: Database
    package let deviceActivities: Database
    package let tokenOwners: Database
    package let ownerCleanup: Database
    package let expiry: Database
    package let tombstones: Database
    package let history: Database
    package let apps: Database
    package let meta: Database

    package init(_ env: Environment) throws {
        devices = try env.openDatabase("v3.devices")
        pushTokens = try env.openDatabase("v3.pushTokens")
        pushToStart = try env.openDatabase("v3.pushToStart")
        activityTokens = try env.openDatabase("v3.activityTokens")
        deviceActivities = try env.openDatabase("v3.deviceActivities")
        tokenOwners = try env.openDatabase("v3.tokenOwners")
        ownerCleanup = try env.openDatabase("v3.ownerCleanup")
        expiry = try env.openDatabase("v3.expiry")
        tombstones = try env.openDatabase("v3.tombstones")
        history = try env.openDatabase("v3.history")
        apps = try env.openDatabase("apps")
        meta = try env.openDatabase("meta")
    }

    /// The token database of a kind.
    package func database(_ kind: TokenKind) -> Database {
        switch kind {
        case .push: pushTokens
        case .pushToStart: pushToStart
        case .activity: activityTokens
        }
    }

    package enum MetaKey {
        package static let schemaVersion = Array("schemaVersion".utf8)
        package static let cursorSecret = Array("cursorSecret".utf8)
        package static let lastSweepAt = Array("lastSweepAt".utf8)
        /// `TokenVault.indexKeyCheck` of the key file the registry was written with.
        package static let indexKeyCheck = Array("indexKeyCheck".utf8)
        /// The sealing key id a rotation made current (one byte): every
        /// process's writes seal under it once they see it.
        package static let sealingKeyID = Array("sealingKeyID".utf8)
        /// Present from the migration's last commit until the file has been
        /// compacted: freed pages may still hold plaintext tokens.
        package static let compactionPending = Array("compactionPending".utf8)
        /// The serving process and the sealing keys it holds (`ServerKeys`).
        package static let server = Array("server".utf8)
        /// Followed by a key id: `TokenVault.keyCheck` sealed under that key.
        package static let sealingKeyCheck = Array("sealingKeyCheck.".utf8)
    }
}

/// Why a backup could not be written safely.
public enum BackupError: Error, Hashable, Sendable, CustomStringConvertible {
    case permissions(path: String, errno: Int32)

    public var description: String {
        switch self {
        case .permissions(let path, let code):
            "cannot restrict permissions of '\(path)': \(String(cString: strerror(code)))"
        }
    }
}
