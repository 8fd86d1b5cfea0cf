/// Everything the HTTP layer may ask of the registry. Every rule of API.md
/// (one owner per token, device cap, sequence ordering, expiry) is enforced
/// behind this protocol, so a second backend must pass the same behaviour
/// tests (`Tests/RegistryTests` are written against this protocol).
///
/// Writes are `async`: they are handed to the group-commit writer and return
/// once the batch that holds them has committed with fsync. A write that
/// returns has been made durable; a write that throws changed nothing.
/// Reads are synchronous and run in a short read transaction on the caller's
/// thread.
///
/// Identifiers arrive already validated by `Identifier` rules; token formats
/// are checked here against the platform that will hold them.
public protocol RegistryStore: Sendable {
    /// The launch upsert. Throws `.staleWrite`, `.invalidField`.
    func registerDevice(_ registration: DeviceRegistration) async throws -> RegistrationOutcome

    /// `nil` when the user has no such device in that app.
    func device(userId: String, appId: String, deviceId: String) throws -> DeviceRecord?

    /// A user's devices (of one app, or of every app when `appId` is nil),
    /// most recently seen first, ties by `appId` then `deviceId` bytes.
    func devices(userId: String, appId: String?) throws -> [DeviceRecord]

    /// Devices of many users at once (at most 1,000 ids), in UTF-8 byte
    /// order of the ids, each id once (compared as bytes); users with no
    /// device (in `appId`, when given) are absent from the answer.
    func devices(userIds: [String], appId: String?) throws -> [UserDevices]

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

    /// One page of an activity's tokens (of one app when `appId` is given).
    /// `cursor` is a `nextCursor` from an earlier page with the same filter;
    /// a cursor that was not made by this store, or was altered, throws
    /// `.invalidField(field: "cursor", …)`.
    func activityTokens(activityId: String, appId: String?, limit: Int, cursor: String?) throws -> ActivityTokenPage

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

    /// A user's token history, newest first, at most `limit` events.
    func history(userId: String, limit: Int) throws -> [HistoryEvent]

    /// Deletes what has expired (all of it, in bounded transactions), or with
    /// `dryRun` counts what would be deleted. Task cancellation stops it
    /// between two bounded steps (`CancellationError`).
    func sweep(dryRun: Bool) async throws -> SweepCounts

    func stats() throws -> StoreStats

    /// `false` once storage is unusable (a commit failed): `/healthz` answers 503.
    var isHealthy: Bool { get }
}

/// The v1 calls, which name no app: they act on the `default` app's records
/// (reads of a user's devices see every app), so a v1 client and the v1
/// tests are unaffected by app families.
extension RegistryStore {
    public func device(userId: String, deviceId: String) throws -> DeviceRecord? {
        try device(userId: userId, appId: Identifier.defaultAppId, deviceId: deviceId)
    }

    public func devices(userId: String) throws -> [DeviceRecord] {
        try devices(userId: userId, appId: nil)
    }

    public func devices(userIds: [String]) throws -> [UserDevices] {
        try devices(userIds: userIds, appId: nil)
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

    public func activityTokens(activityId: String, limit: Int, cursor: String?) throws -> ActivityTokenPage {
        try activityTokens(activityId: activityId, appId: nil, limit: limit, cursor: cursor)
    }
}
