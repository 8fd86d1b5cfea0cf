import RegistryCore

/// The expiry index: (kind, hour bucket of lastSeen, record key) → empty.
///
/// A coarse bucket means a launch upsert of an unchanged device moves its
/// entry at most once an hour, so most upserts dirty no index page; the
/// exact `lastSeenAt` lives in the record and the sweeper re-checks it.
/// Each kind is its own key range with big-endian buckets, so a scan from
/// the start of a kind visits oldest first and the sweep stops at the first
/// bucket past that kind's cutoff: O(expired).
package struct ExpiryKey: Hashable {
    package enum Kind: UInt8, Sendable {
        case device = 1
        case activityToken = 2
        case tombstone = 3
        /// A token history event (swept with the device TTL).
        case history = 4
    }

    package static let bucketMilliseconds: Int64 = 3_600_000

    package var bucket: UInt64
    package var kind: Kind
    /// The record's key in its own database.
    package var recordKey: [UInt8]

    package init(at time: Timestamp, kind: Kind, recordKey: [UInt8]) {
        self.bucket = Self.bucket(of: time)
        self.kind = kind
        self.recordKey = recordKey
    }

    package static func bucket(of time: Timestamp) -> UInt64 {
        UInt64(max(0, time.milliseconds) / bucketMilliseconds)
    }

    package var bytes: [UInt8] { Self.start(of: kind, bucket: bucket) + recordKey }

    package init?(bytes: [UInt8]) {
        guard bytes.count > 9, let kind = Kind(rawValue: bytes[0]) else { return nil }
        self.kind = kind
        self.bucket = BigEndian.value(bytes[1..<9])
        self.recordKey = Array(bytes[9...])
    }

    /// The first key of `kind` in `bucket`: where a sweep starts (bucket 0)
    /// or stops (the bucket after its cutoff).
    package static func start(of kind: Kind, bucket: UInt64) -> [UInt8] {
        [kind.rawValue] + BigEndian.bytes(bucket, count: 8)
    }
}
