/// Everything the HTTP layer may ask of the registry. Every rule of docs/api.md
/// (one owner per token, device cap, sequence ordering, expiry) is enforced
/// behind this protocol, so a second backend must pass the same behaviour
/// tests (`Tests/RegistryContractTests` are written against this protocol
/// and run against every backend).
///
/// Writes are `async`: a write that returns has been made durable (the
/// backend's commit returned success); a write that throws changed nothing,
/// except `RegistryError.unavailable` on a commit whose outcome is unknown
/// (PostgreSQL lost the connection during COMMIT), which the client settles
/// by retrying with the same sequence.
///
/// Reads are `RegistryReads`, run by `read(_:)` on whatever thread the
/// backend may block (LMDB: the caller's, via `inlineReads`; PostgreSQL: a
/// connection's own thread), so no Swift concurrency thread ever waits on
/// the network.
///
/// Identifiers arrive already validated by `Identifier` rules; token formats
/// are checked here against the platform that will hold them.
public protocol RegistryStore: Sendable {
    /// The launch upsert. Throws `.staleWrite`, `.invalidField`.
    func registerDevice(_ registration: DeviceRegistration) async throws -> RegistrationOutcome




    /// Sign-out of one app's record: removes the device, its push-to-start
    /// token and all its activity tokens in one transaction. Succeeds when
    /// nothing was there. With a `sequence`, leaves a tombstone until the
    /// device TTL passes. Throws `.staleWrite` when the stored record has a
    /// higher sequence.
    func signOut(userId: String, appId: String, deviceId: String, sequence: UInt64?) async throws

    /// Sets the device's push-to-start token, creating the device if needed.
    func registerPushToStartToken(_ registration: PushToStartRegistration) async throws -> DeviceRecord

    /// Removes the device's push-to-start token; succeeds when there was none.
    func removePushToStartToken(userId: String, appId: String, deviceId: String) async throws

    /// Sets the device's update token for one activity, creating the device if needed.
    func registerActivityToken(_ registration: ActivityTokenRegistration) async throws -> ActivityToken

    /// Removes one activity token; succeeds when there was none.
    func removeActivityToken(activityId: String, userId: String, appId: String, deviceId: String) async throws


    /// APNs feedback: removes `token` wherever it is held (push,
    /// push-to-start, activity); hex tokens match case-insensitively. With
    /// `before`, only tokens whose last registration is strictly earlier.
    /// Returns how many tokens were removed.
    func removeToken(_ token: String, reason: FeedbackReason, registeredBefore before: Timestamp?) async throws -> Int

    /// APNs environment correction: sets the environment of `token`
    /// wherever it is held (push, push-to-start, activity), with an
    /// `environmentCorrected` history event each. Returns how many holders
    /// changed (0 when none holds it, or all already had that environment).
    func correctEnvironment(token: String, environment: APNsEnvironment) async throws -> Int


    /// Deletes what has expired (all of it, in bounded transactions), or with
    /// `dryRun` counts what would be deleted. Task cancellation stops it
    /// between two bounded steps (`CancellationError`).
    func sweep(dryRun: Bool) async throws -> SweepCounts

    /// Runs `body` with the store's reads, on a thread that may block on
    /// the backend (one consistent snapshot for PostgreSQL), and returns its
    /// value. Backend failures are `RegistryError.unavailable`.
    func read<T: Sendable>(_ body: @escaping @Sendable (any RegistryReads) throws -> T) async throws -> T

    /// The apps a registration may name (`--apps`). A device-API read or
    /// delete naming another app finds nothing (the HTTP layer answers as
    /// for an absent record); the sender reads still see such an app's records.
    var declaredApps: DeclaredApps { get }

    /// Reads that never wait on anything but memory (LMDB), which the HTTP
    /// server may run on its own thread without a task; `nil` when reads
    /// wait on the network (PostgreSQL), so they go through `read(_:)`.
    var inlineReads: (any RegistryReads & Sendable)? { get }
}

/// The store's reads. Each call is one consistent view.
public protocol RegistryReads {
    /// `nil` when the user has no such device in that app.
    func device(userId: String, appId: String, deviceId: String) throws -> DeviceRecord?

    /// A user's devices (of one app, or of every app when `appId` is nil),
    /// most recently seen first, ties by `appId` then `deviceId` bytes.
    func devices(userId: String, appId: String?) throws -> [DeviceRecord]

    /// Devices of many users at once (at most 1,000 ids), in UTF-8 byte
    /// order of the ids, each id once (compared as bytes); users with no
    /// device (in `appId`, when given) are absent from the answer.
    func devices(userIds: [String], appId: String?) throws -> [UserDevices]

    /// One page of an activity's tokens (of one app when `appId` is given).
    /// `cursor` is a `nextCursor` from an earlier page with the same filter;
    /// a cursor that was not made by this store, or was altered, throws
    /// `.invalidField(field: "cursor", …)`.
    func activityTokens(activityId: String, appId: String?, limit: Int, cursor: String?) throws -> ActivityTokenPage

    /// A user's token history, newest first, at most `limit` events.
    func history(userId: String, limit: Int) throws -> [HistoryEvent]

    /// How many update tokens the activity holds, per app and environment
    /// (pairs with no token are absent), in `appId` byte order then
    /// environment order. Opens no token, so an operator's read never
    /// carries one.
    func activityTokenCounts(activityId: String) throws -> [ActivityTokenCount]

    /// The removals recorded in every user's history from `from` (included)
    /// to `to` (excluded), counted per bucket of `bucket` starting at `from`
    /// (`RemovalCount.bucketStart`), reason and APNs reason, in no
    /// particular order; buckets without removals are absent. Costs time in proportion to the history events
    /// in the window (of any action), not to the size of the store.
    func removalCounts(from: Timestamp, to: Timestamp, bucket: Duration) throws -> [RemovalCount]

    func stats() throws -> StoreStats

    /// Every app the registry holds records (or ever held them) for, in
    /// byte order: `serve` logs those not declared.
    func storedApps() throws -> [String]

    /// Throws `.unavailable` when the storage cannot serve (LMDB: a commit
    /// failed; PostgreSQL: the database is unreachable): `/healthz` answers 503.
    func checkHealth() throws
}

/// The reads as calls of their own, each in its own `read(_:)`.
package extension RegistryStore {
    public func device(userId: String, appId: String, deviceId: String) async throws -> DeviceRecord? {
        try await read { try $0.device(userId: userId, appId: appId, deviceId: deviceId) }
    }

    public func devices(userId: String, appId: String?) async throws -> [DeviceRecord] {
        try await read { try $0.devices(userId: userId, appId: appId) }
    }

    public func devices(userIds: [String], appId: String?) async throws -> [UserDevices] {
        try await read { try $0.devices(userIds: userIds, appId: appId) }
    }

    public func activityTokens(activityId: String, appId: String?, limit: Int, cursor: String?) async throws -> ActivityTokenPage {
        try await read { try $0.activityTokens(activityId: activityId, appId: appId, limit: limit, cursor: cursor) }
    }

    public func history(userId: String, limit: Int) async throws -> [HistoryEvent] {
        try await read { try $0.history(userId: userId, limit: limit) }
    }

    public func stats() async throws -> StoreStats {
        try await read { try $0.stats() }
    }

    public func activityTokenCounts(activityId: String) async throws -> [ActivityTokenCount] {
        try await read { try $0.activityTokenCounts(activityId: activityId) }
    }

    public func removalCounts(from: Timestamp, to: Timestamp, bucket: Duration) async throws -> [RemovalCount] {
        try await read { try $0.removalCounts(from: from, to: to, bucket: bucket) }
    }

    public func storedApps() async throws -> [String] {
        try await read { try $0.storedApps() }
    }

}

/// The v1 calls, which name no app: they act on the `default` app's records
/// (reads of a user's devices see every app), so a v1 client and the v1
/// tests are unaffected by app families.
package extension RegistryStore {
    public func device(userId: String, deviceId: String) async throws -> DeviceRecord? {
        try await device(userId: userId, appId: Identifier.defaultAppId, deviceId: deviceId)
    }

    public func devices(userId: String) async throws -> [DeviceRecord] {
        try await devices(userId: userId, appId: nil)
    }

    public func devices(userIds: [String]) async throws -> [UserDevices] {
        try await devices(userIds: userIds, appId: nil)
    }

    public func signOut(userId: String, deviceId: String, sequence: UInt64?) async throws {
        try await signOut(userId: userId, appId: Identifier.defaultAppId, deviceId: deviceId, sequence: sequence)
    }

    public func removePushToStartToken(userId: String, deviceId: String) async throws {
        try await removePushToStartToken(userId: userId, appId: Identifier.defaultAppId, deviceId: deviceId)
    }

    public func removeActivityToken(activityId: String, userId: String, deviceId: String) async throws {
        try await removeActivityToken(activityId: activityId, userId: userId, appId: Identifier.defaultAppId,
                                      deviceId: deviceId)
    }

    public func activityTokens(activityId: String, limit: Int, cursor: String?) async throws -> ActivityTokenPage {
        try await activityTokens(activityId: activityId, appId: nil, limit: limit, cursor: cursor)
    }
}
