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

    /// `nil` when the user has no such device.
    func device(userId: String, deviceId: String) throws -> DeviceRecord?

    /// A user's devices, most recently seen first, ties by `deviceId` ascending.
    func devices(userId: String) throws -> [DeviceRecord]

    /// Devices of many users at once (at most 1,000 ids), in UTF-8 byte
    /// order of the ids, each id once (compared as bytes); users with no
    /// device are absent from the answer.
    func devices(userIds: [String]) throws -> [UserDevices]

    /// Sign-out: removes the device, its push-to-start token and all its
    /// activity tokens in one transaction. Succeeds when nothing was there.
    /// With a `sequence`, leaves a tombstone until the device TTL passes.
    /// Throws `.staleWrite` when the stored record has a higher sequence.
    func signOut(userId: String, deviceId: String, sequence: UInt64?) async throws

    /// Sets the device's push-to-start token, creating the device if needed.
    func registerPushToStartToken(_ registration: PushToStartRegistration) async throws -> DeviceRecord

    /// Removes the device's push-to-start token; succeeds when there was none.
    func removePushToStartToken(userId: String, deviceId: String) async throws

    /// Sets the device's update token for one activity, creating the device if needed.
    func registerActivityToken(_ registration: ActivityTokenRegistration) async throws -> ActivityToken

    /// Removes one activity token; succeeds when there was none.
    func removeActivityToken(activityId: String, userId: String, deviceId: String) async throws

    /// One page of an activity's tokens. `cursor` is a `nextCursor` from an
    /// earlier page; a cursor that was not made by this store, or was altered,
    /// throws `.invalidField(field: "cursor", …)`.
    func activityTokens(activityId: String, limit: Int, cursor: String?) throws -> ActivityTokenPage

    /// APNs feedback: removes `token` wherever it is held (push,
    /// push-to-start, activity); hex tokens match case-insensitively. With
    /// `before`, only tokens whose last registration is strictly earlier.
    /// Returns how many tokens were removed.
    func removeToken(_ token: String, reason: FeedbackReason, registeredBefore before: Timestamp?) async throws -> Int

    /// Deletes what has expired (all of it, in bounded transactions), or with
    /// `dryRun` counts what would be deleted. Task cancellation stops it
    /// between two bounded steps (`CancellationError`).
    func sweep(dryRun: Bool) async throws -> SweepCounts

    func stats() throws -> StoreStats

    /// `false` once storage is unusable (a commit failed): `/healthz` answers 503.
    var isHealthy: Bool { get }
}
