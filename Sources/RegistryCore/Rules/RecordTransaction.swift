/// What the rules of docs/api.md need from a backend inside one write
/// transaction: typed reads of one record and token, and writes that keep
/// the backend's own indexes (token owners, expiry, the user's history) in
/// step with the record they touch.
///
/// The rules themselves (`RecordTransaction+Rules`: sequences and
/// tombstones, one owner per token, the device and activity caps, feedback,
/// environment correction, sign-out, import) are written once against this
/// protocol, so every backend applies exactly the same ones: LMDB through
/// `RecordWriter`, PostgreSQL through `PostgresRecordWriter`. A thrown error
/// discards everything the transaction wrote.
///
/// Ids are compared as bytes, never with `String ==` (which treats
/// canonically equivalent strings as equal while the stored ids differ).
package protocol RecordTransaction {
    /// The transaction's clock reading: every timestamp it writes.
    var now: Timestamp { get }
    /// `true` for writes that restore state rather than change it (import,
    /// repair, migration): they write no history events, and take the apps
    /// their records name, declared or not.
    var restoring: Bool { get set }
    /// The apps a caller's write may name.
    var declaredApps: DeclaredApps { get }

    // MARK: Reads

    /// The record of (user, appId, device), registering the app when new.
    /// Unless `restoring`, an undeclared app is `RegistryError.undeclaredApp`.
    func recordID(_ user: String, appId: String, _ device: String) throws -> RecordID
    /// The record of (user, appId, device); `nil` when no record of that app
    /// was ever written (nothing of it can exist).
    func existingRecordID(_ user: String, appId: String, _ device: String) throws -> RecordID?
    func device(_ id: RecordID) throws -> DeviceValue?
    func tombstone(_ id: RecordID) throws -> TombstoneValue?
    /// The token `holder` holds: its device-level token of `kind` (push,
    /// push-to-start), or, for `.activity`, its token of `holder.activityId`.
    func token(_ kind: TokenKind, of holder: TokenHolder) throws -> TokenValue?
    /// Who holds exactly `token` as a token of `kind`.
    func owner(of token: String, _ kind: TokenKind) throws -> TokenHolder?
    /// One app's devices of a user (at most the device cap).
    func deviceValues(of user: String, app: String) throws -> [(RecordID, DeviceValue)]
    /// Activities the device holds a token for (at most the activity cap).
    func activities(_ id: RecordID) throws -> [String]
    /// The full record with its device-level tokens.
    func join(_ id: RecordID, _ value: DeviceValue) throws -> DeviceRecord

    // MARK: Writes

    /// Writes the device (its expiry entry follows `lastSeenAt`).
    func save(_ id: RecordID, _ value: DeviceValue, previous: DeviceValue?) throws
    /// Removes the device with all its tokens, each with a `removed` event
    /// naming `reason`. Returns what went, for sweep counts.
    @discardableResult
    func deleteDevice(_ id: RecordID, reason: HistoryEvent.Reason) throws -> SweepCounts
    /// Stores a device-level token (push or push-to-start) with its owner
    /// entry; a new or replaced token is a `registered` or `rotated` event.
    func putToken(_ kind: TokenKind, _ id: RecordID, _ value: TokenValue) throws
    /// Rewrites a stored token's environment only (no event, no owner change).
    func setTokenEnvironment(_ kind: TokenKind, of holder: TokenHolder, _ environment: APNsEnvironment) throws
    /// Removes a device-level token; `false` when there was none.
    @discardableResult
    func removeToken(_ kind: TokenKind, _ id: RecordID, reason: HistoryEvent.Reason,
                     feedback: FeedbackReason?) throws -> Bool
    /// Stores an activity token of a device that exists, counting it on the device.
    func putActivityToken(_ activity: String, _ id: RecordID, _ value: TokenValue) throws
    @discardableResult
    func removeActivityToken(_ activity: String, _ id: RecordID, reason: HistoryEvent.Reason,
                             feedback: FeedbackReason?) throws -> Bool
    /// Leaves (or raises) a sign-out's tombstone; past `maxTombstones` of
    /// the user's app, the oldest (ties by deviceId bytes) go.
    func putTombstone(_ id: RecordID, sequence: UInt64, maxTombstones: Int) throws
    /// Appends an event to the record's user's history (unless
    /// `restoring`), trimmed to `HistoryEvent.maxPerUser`.
    func recordEvent(_ id: RecordID, _ kind: TokenKind, activity: String?, _ action: HistoryEvent.Action,
                     reason: HistoryEvent.Reason?, feedback: FeedbackReason?, token: String) throws

    // MARK: Import

    /// Puts an exported tombstone back as it is (timestamps kept).
    func restoreTombstone(_ tombstone: Tombstone) throws
    /// Puts an exported history event back at its own time, unless the user
    /// already has `occurrence` identical ones; then trims to the bound.
    func restoreHistory(_ event: HistoryEvent, occurrence: Int) throws
}
