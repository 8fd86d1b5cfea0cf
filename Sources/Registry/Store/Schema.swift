import Foundation
import LMDB

/// The named databases of one registry environment, opened once at start.
///
/// | database | key | value |
/// | --- | --- | --- |
/// | devices | (user, device) | DeviceValue |
/// | pushTokens, pushToStart | (user, device) | TokenValue |
/// | activityTokens | (activity, user, device) | TokenValue |
/// | deviceActivities | (user, device, activity) | empty |
/// | tokenOwners | SHA-256(token) + kind | OwnerValue |
/// | expiry | (hour bucket, kind, record key) | empty |
/// | tombstones | (user, device) | TombstoneValue |
/// | meta | name | schema version, cursor secret, lastSweepAt |
struct Schema: Sendable {
    /// Bumped when a stored encoding changes; checked at open, where
    /// `SchemaMigration` brings an older environment up to it.
    /// 2: device values carry `activityCount`.
    static let version: UInt64 = 2

    let devices: Database
    let pushTokens: Database
    let pushToStart: Database
    let activityTokens: Database
    let deviceActivities: Database
    let tokenOwners: Database
    let expiry: Database
    let tombstones: Database
    let meta: Database

    init(_ env: Environment) throws {
        devices = try env.openDatabase("devices")
        pushTokens = try env.openDatabase("pushTokens")
        pushToStart = try env.openDatabase("pushToStart")
        activityTokens = try env.openDatabase("activityTokens")
        deviceActivities = try env.openDatabase("deviceActivities")
        tokenOwners = try env.openDatabase("tokenOwners")
        expiry = try env.openDatabase("expiry")
        tombstones = try env.openDatabase("tombstones")
        meta = try env.openDatabase("meta")
    }

    /// The token database of a kind.
    func database(_ kind: TokenKind) -> Database {
        switch kind {
        case .push: pushTokens
        case .pushToStart: pushToStart
        case .activity: activityTokens
        }
    }

    enum MetaKey {
        static let schemaVersion = Array("schemaVersion".utf8)
        static let cursorSecret = Array("cursorSecret".utf8)
        static let lastSweepAt = Array("lastSweepAt".utf8)
    }
}

/// Why a registry environment could not be opened.
public enum RegistryOpenError: Error, Hashable, Sendable, CustomStringConvertible {
    case schemaMismatch(found: UInt64, expected: UInt64)

    public var description: String {
        switch self {
        case .schemaMismatch(let found, let expected):
            "the data directory holds schema version \(found); this build reads versions up to \(expected)"
        }
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
