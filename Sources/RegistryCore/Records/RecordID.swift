import Codecs

/// One record's identity: a device of one app of one user, the app as the
/// engine names it (the LMDB store: a short code; PostgreSQL: the `appId`).
/// Compared as bytes (`sameBytes`, `identity`), never with `String ==`,
/// which treats canonically equivalent strings as equal while the stored
/// ids differ.
package struct RecordID: Hashable, Sendable {
    package var user: String
    package var app: String
    package var device: String

    package init(user: String, app: String, device: String) {
        self.user = user
        self.app = app
        self.device = device
    }

    /// The three ids, length-prefixed: equal exactly when the ids are equal
    /// as bytes (a dictionary key that never merges two records).
    package var identity: [UInt8] { LengthPrefixed.encode([user, app, device]) }

    /// Byte equality of the three ids.
    package func sameBytes(_ other: RecordID) -> Bool {
        user.hasSameBytes(as: other.user) && app.hasSameBytes(as: other.app)
            && device.hasSameBytes(as: other.device)
    }
}

/// The kinds of token a record holds.
package enum TokenKind: UInt8, Sendable, CaseIterable {
    case push = 1
    case pushToStart = 2
    case activity = 3
}

/// Who holds a token: a record and, for an activity token, the activity.
package struct TokenHolder: Hashable, Sendable {
    package var id: RecordID
    /// Set for activity tokens only.
    package var activityId: String?

    package init(id: RecordID, activityId: String?) {
        self.id = id
        self.activityId = activityId
    }

    /// Whether this holder is (record `id`, `activity`), compared as bytes.
    package func isHolder(_ id: RecordID, activity: String?) -> Bool {
        guard self.id.sameBytes(id) else { return false }
        switch (activityId, activity) {
        case (nil, nil): return true
        case (let a?, let b?): return a.hasSameBytes(as: b)
        default: return false
        }
    }
}
