/// The values the rules read and write, as every engine stores them (the
/// LMDB store encodes each in a versioned binary value, PostgreSQL in
/// columns): the record without its tokens, one token, a sign-out's tombstone.

/// A device record without its tokens.
package struct DeviceValue: Hashable, Sendable {
    package var platform: Platform
    /// The push token's environment.
    package var environment: APNsEnvironment
    package var osVersion: String?
    package var appVersion: String?
    package var createdAt: Timestamp
    package var lastSeenAt: Timestamp
    package var sequence: UInt64?
    /// How many activity tokens the device holds (at most the per-device cap).
    package var activityCount: Int
    /// Read from a stored form that did not keep `activityCount` (the LMDB
    /// store's schema 1, which its migration rewrites). Not part of
    /// equality: it says how the value was read, not what it holds.
    package private(set) var needsActivityCount = false

    package static func == (a: DeviceValue, b: DeviceValue) -> Bool {
        a.platform == b.platform && a.environment == b.environment && a.osVersion == b.osVersion
            && a.appVersion == b.appVersion && a.createdAt == b.createdAt && a.lastSeenAt == b.lastSeenAt
            && a.sequence == b.sequence && a.activityCount == b.activityCount
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(platform)
        hasher.combine(environment)
        hasher.combine(osVersion)
        hasher.combine(appVersion)
        hasher.combine(createdAt)
        hasher.combine(lastSeenAt)
        hasher.combine(sequence)
        hasher.combine(activityCount)
    }

    package init(platform: Platform, environment: APNsEnvironment, osVersion: String?, appVersion: String?,
                 createdAt: Timestamp, lastSeenAt: Timestamp, sequence: UInt64?, activityCount: Int = 0,
                 needsActivityCount: Bool = false) {
        self.platform = platform
        self.environment = environment
        self.osVersion = osVersion
        self.appVersion = appVersion
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.sequence = sequence
        self.activityCount = activityCount
        self.needsActivityCount = needsActivityCount
    }
}

/// One token, in plaintext (in memory only: every engine stores it sealed
/// by `TokenVault`).
package struct TokenValue: Hashable, Sendable {
    package var token: String {
        didSet { sealedAs = nil }
    }
    package var environment: APNsEnvironment
    /// The last time a registration carried it.
    package var updatedAt: Timestamp
    /// The sealed bytes this value was read from, with their slot: a
    /// re-registration that only refreshes `updatedAt` writes them back
    /// instead of sealing the same token again (while they are under the
    /// current key, in the same slot). Not part of equality.
    package private(set) var sealedAs: (slot: TokenSlot, bytes: ArraySlice<UInt8>)?

    package static func == (a: TokenValue, b: TokenValue) -> Bool {
        a.token == b.token && a.environment == b.environment && a.updatedAt == b.updatedAt
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(token)
        hasher.combine(environment)
        hasher.combine(updatedAt)
    }

    package init(token: String, environment: APNsEnvironment, updatedAt: Timestamp,
                 sealedAs: (slot: TokenSlot, bytes: ArraySlice<UInt8>)? = nil) {
        self.token = token
        self.environment = environment
        self.updatedAt = updatedAt
        self.sealedAs = sealedAs
    }

    /// The token sealed for `slot`: the bytes it was read from when they are
    /// still right (same slot, current key), else sealed again.
    package func sealed(in slot: TokenSlot, _ vault: TokenVault) throws(RegistryError) -> [UInt8] {
        if let sealedAs, sealedAs.slot == slot, vault.keyID(of: sealedAs.bytes) == vault.ring.currentKeyID {
            return Array(sealedAs.bytes)
        }
        return try vault.seal(token, in: slot)
    }
}

/// A sign-out that carried a sequence.
package struct TombstoneValue: Hashable, Sendable {
    package var sequence: UInt64
    package var deletedAt: Timestamp

    package init(sequence: UInt64, deletedAt: Timestamp) {
        self.sequence = sequence
        self.deletedAt = deletedAt
    }
}
