import Codecs
import RegistryCore

/// Builds every LMDB key of the store from length-prefixed parts
/// (`LengthPrefixed`), so an id containing any byte, separator or NUL
/// included, cannot forge another key, and the key of a prefix (a user, an
/// activity) is a byte prefix of its children's keys.
///
/// Limit: LMDB keys are at most 511 bytes. The longest key here, an expiry
/// entry of an activity token, is 9 + 3 × (2 + 128) + (2 + 155) = 556 bytes
/// at the very worst, over LMDB's limit: so an expiry entry names an
/// activity token by (user, app, device, activity) hash, see `ExpiryKey`.
package enum StoreKey {
    package static func parts(_ parts: String...) -> [UInt8] { LengthPrefixed.encode(parts) }

    package static func encode(_ parts: [String]) -> [UInt8] { LengthPrefixed.encode(parts) }

    /// Splits a key back into its parts; `nil` when it is not well formed.
    package static func decode(_ key: some Collection<UInt8>) -> [String]? { LengthPrefixed.decode(Array(key)) }

    /// `decode` of a key in place (still in the database's map).
    package static func decode(_ key: UnsafeRawBufferPointer) -> [String]? { LengthPrefixed.decode(key) }

    /// `devices`, `pushTokens`, `pushToStart`, `tombstones`: (user, app, device).
    package static func device(_ id: RecordID) -> [UInt8] { parts(id.user, id.app, id.device) }

    /// The prefix of every (user, …) key.
    package static func user(_ user: String) -> [UInt8] { parts(user) }

    /// The prefix of one app's (user, app, …) keys: what the device cap counts.
    package static func userApp(_ user: String, _ app: String) -> [UInt8] { parts(user, app) }

    /// `activityTokens`: (activity, user, app, device).
    package static func activityToken(_ activity: String, _ id: RecordID) -> [UInt8] {
        parts(activity, id.user, id.app, id.device)
    }

    /// `deviceActivities`: (user, app, device, activity).
    package static func deviceActivity(_ id: RecordID, _ activity: String) -> [UInt8] {
        parts(id.user, id.app, id.device, activity)
    }

    /// `history`: (user), then the event's time (8 bytes, big-endian
    /// milliseconds) and a counter (4 bytes) for events of one millisecond,
    /// so a user's events are in time order and a reverse scan is newest first.
    package static func history(_ user: String, at time: Timestamp, counter: UInt32) -> [UInt8] {
        StoreKey.user(user) + BigEndian.bytes(UInt64(max(0, time.milliseconds)), count: 8)
            + BigEndian.bytes(UInt64(counter), count: 4)
    }

    /// (time, counter) of a history key: its last 12 bytes.
    package static func historyClock(_ key: [UInt8]) -> (at: Timestamp, counter: UInt32)? {
        guard key.count > 12 else { return nil }
        let tail = key.suffix(12)
        return (Timestamp(milliseconds: Int64(bitPattern: BigEndian.value(tail.prefix(8)))),
                UInt32(BigEndian.value(tail.suffix(4))))
    }

    /// The record a (user, app, device) key names; `nil` when malformed.
    package static func recordID(_ key: some Collection<UInt8>) -> RecordID? {
        recordID(parts: decode(key))
    }

    /// `recordID` of a key in place (still in the database's map).
    package static func recordID(_ key: UnsafeRawBufferPointer) -> RecordID? {
        recordID(parts: decode(key))
    }

    private static func recordID(parts: [String]?) -> RecordID? {
        guard let parts, parts.count == 3 else { return nil }
        return RecordID(user: parts[0], app: parts[1], device: parts[2])
    }

    /// (activity, record) of an `activityTokens` key.
    package static func activityTokenParts(_ key: some Collection<UInt8>) -> (activity: String, id: RecordID)? {
        guard let parts = decode(key), parts.count == 4 else { return nil }
        return (parts[0], RecordID(user: parts[1], app: parts[2], device: parts[3]))
    }

    /// (record, activity) of a `deviceActivities` key.
    package static func deviceActivityParts(_ key: some Collection<UInt8>) -> (id: RecordID, activity: String)? {
        guard let parts = decode(key), parts.count == 4 else { return nil }
        return (RecordID(user: parts[0], app: parts[1], device: parts[2]), parts[3])
    }
}

package extension RecordID {
    /// The record's key in `devices`, `pushTokens`, `pushToStart` and
    /// `tombstones`: (user, app code, device), which is also its `identity`.
    var key: [UInt8] { StoreKey.device(self) }
}
