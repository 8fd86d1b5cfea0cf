@testable import RegistryCore
@testable import RegistryLMDB
@testable import RegistryPostgres

/// The v1-shaped key helpers the store tests were written with, over the
/// schema 3 keys: a record of the `default` app, which is the first app a
/// test store writes, so its code is "0". Token owner keys and sealed
/// values use the test key ring (`TestKeys`).
package extension StoreKey {
    static func device(_ user: String, _ device: String) -> [UInt8] { self.device(RecordID.v1(user, device)) }

    static func activityToken(_ activity: String, _ user: String, _ device: String) -> [UInt8] {
        activityToken(activity, RecordID.v1(user, device))
    }

    static func deviceActivity(_ user: String, _ device: String, _ activity: String) -> [UInt8] {
        deviceActivity(RecordID.v1(user, device), activity)
    }

    static func tokenOwner(_ token: String, _ kind: TokenKind) -> [UInt8] { TestKeys.vault.ownerKey(token, kind) }
}

package extension RecordID {
    static func v1(_ user: String, _ device: String) -> RecordID { RecordID(user: user, app: "0", device: device) }
}

package extension TokenHolder {
    init(userId: String, deviceId: String, activityId: String?) {
        self.init(id: .v1(userId, deviceId), activityId: activityId)
    }

    var userId: String { id.user }
    var deviceId: String { id.device }
}

package extension TestKeys {
    static let vault = TokenVault(ring: ring)
}

package extension TokenValue {
    /// A token value to store under `key` in `kind`'s database, sealed with
    /// the test keys (the tests' raw writes).
    func encoded(_ kind: TokenKind = .push, key: [UInt8]) throws -> [UInt8] {
        try encoded(in: TokenSlot(kind, key: key), TestKeys.vault)
    }

    /// The token value stored under `key` in `kind`'s database.
    init(decoding bytes: [UInt8], _ kind: TokenKind = .push, key: [UInt8]) throws {
        try self.init(decoding: bytes, in: TokenSlot(kind, key: key), TestKeys.vault)
    }
}
