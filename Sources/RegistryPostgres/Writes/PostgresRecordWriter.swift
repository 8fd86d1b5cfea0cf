import Codecs
import RegistryCore
import Postgres

/// The PostgreSQL store's `RecordTransaction`: the rules' primitives as
/// statements on one connection inside one transaction (REPEATABLE READ
/// under the user's lock: see `writing`). The
/// database keeps the indexes (primary keys, the unique `owner_key`, the
/// expiry indexes, a device's activity count by counting), so each
/// primitive touches only its rows; the history is appended in the same
/// transaction.
///
/// A write whose result no rule reads (a device saved, a token refreshed,
/// an event appended) is queued (`queryLater`) and goes in the round trip
/// of the next read, ahead of it, or with COMMIT: round trips, not the
/// statements, were most of a write's cost. A write whose result a rule
/// reads (rows deleted, `RETURNING`) is sent and read at once. Its
/// conflict (40001, 23505) surfaces from the call that sends it, and fails
/// the transaction all the same.
package struct PostgresRecordWriter: RecordTransaction {
    package let connection: PostgresConnection
    package let vault: TokenVault
    let apps: PostgresAppCatalog
    package let now: Timestamp
    package var restoring = false
    package var declaredApps: DeclaredApps { apps.declared }
    /// What `device` read beside the device, for this transaction only.
    package let cache = RecordCache()

    /// The record's key columns as the first three parameters.
    private static func key(_ id: RecordID) -> [PostgresValue?] { [.text(id.user), .text(id.app), .text(id.device)] }

    /// The holder's key columns (record, kind, activity) as the first five parameters.
    private static func key(_ kind: TokenKind, _ holder: TokenHolder) -> [PostgresValue?] {
        key(holder.id) + [.int64(Int64(kind.rawValue)), .text(holder.activityId ?? "")]
    }

    private static let recordMatch = "user_id = $1 AND app_id = $2 AND device_id = $3"
    private static let holderMatch = recordMatch + " AND kind = $4 AND activity_id = $5"

    // MARK: Reads

    package func recordID(_ user: String, appId: String, _ device: String) throws -> RecordID {
        try apps.register(appId, connection, restoring: restoring)
        return RecordID(user: user, app: appId, device: device)
    }

    package func existingRecordID(_ user: String, appId: String, _ device: String) throws -> RecordID? {
        try apps.exists(appId, connection) ? RecordID(user: user, app: appId, device: device) : nil
    }

    /// The device, with its tombstone, its device-level tokens and its
    /// activity count in the same statement (`deviceRead`): every
    /// registration reads the device, its tombstone and the token it
    /// registers, and answers with the record, so all of it is remembered
    /// for the transaction (`RecordCache`). The first read of the record a
    /// write named (`writing(user:reading:)`) went with the transaction's
    /// first round trip: it is taken from there, unless the transaction
    /// wrote something of the record since.
    package func device(_ id: RecordID) throws -> DeviceValue? {
        let r = try cache.takeReadAhead(id) ?? connection.queries([Self.deviceRead(id)])[0]
        let tombstone = r.isNull(0, 7) ? nil : TombstoneValue(sequence: try PostgresRows.sequence(r, 0, 7) ?? 0,
                                                               deletedAt: Timestamp(milliseconds: try r.int64(0, 8) ?? 0))
        let holder = TokenHolder(id: id, activityId: nil)
        let push = r.isNull(0, 9) ? nil : try PostgresRows.token(r, 0, from: 9, .push, of: holder, vault)
        let pushToStart = r.isNull(0, 12) ? nil : try PostgresRows.token(r, 0, from: 12, .pushToStart, of: holder, vault)
        cache.remember(id, tombstone: tombstone,
                       tokens: RecordCache.Tokens(push: push, pushToStart: pushToStart,
                                                  activityCount: Int(try r.int64(0, 15) ?? 0)))
        return r.isNull(0, 0) ? nil : try PostgresRows.deviceValue(r, 0, from: 0)
    }

    /// `device`'s statement: columns 0–6 the device, 7–8 the tombstone,
    /// 9–11 and 12–14 the push and push-to-start tokens, 15 the activity
    /// count; one row, NULLs for what is absent.
    static func deviceRead(_ id: RecordID) -> PostgresStatement {
        PostgresStatement(deviceReadSQL, key(id))
    }

    private static let deviceReadSQL = """
        SELECT \(PostgresRows.deviceColumns(of: "d")), t.sequence, t.deleted_at, p.sealed, p.environment, p.updated_at,
               s.sealed, s.environment, s.updated_at,
               (SELECT count(*) FROM registry_tokens a WHERE a.user_id = $1 AND a.app_id = $2 AND a.device_id = $3
                    AND a.kind = 3)
        FROM (SELECT 1) AS one
        LEFT JOIN registry_devices d ON d.user_id = $1 AND d.app_id = $2 AND d.device_id = $3
        LEFT JOIN registry_tombstones t ON t.user_id = $1 AND t.app_id = $2 AND t.device_id = $3
        LEFT JOIN registry_tokens p ON p.user_id = $1 AND p.app_id = $2 AND p.device_id = $3
            AND p.kind = 1 AND p.activity_id = ''
        LEFT JOIN registry_tokens s ON s.user_id = $1 AND s.app_id = $2 AND s.device_id = $3
            AND s.kind = 2 AND s.activity_id = ''
        """

    package func tombstone(_ id: RecordID) throws -> TombstoneValue? {
        if let cached = cache.tombstone(id) { return cached }
        let r = try connection.query("SELECT sequence, deleted_at FROM registry_tombstones WHERE \(Self.recordMatch)",
                                     Self.key(id))
        guard r.rowCount == 1 else { return nil }
        return TombstoneValue(sequence: try PostgresRows.sequence(r, 0, 0) ?? 0,
                              deletedAt: Timestamp(milliseconds: try r.int64(0, 1) ?? 0))
    }

    package func token(_ kind: TokenKind, of holder: TokenHolder) throws -> TokenValue? {
        if holder.activityId == nil, let cached = cache.token(kind, holder.id) { return cached }
        let r = try connection.query("SELECT sealed, environment, updated_at FROM registry_tokens WHERE \(Self.holderMatch)",
                                     Self.key(kind, holder))
        return r.rowCount == 0 ? nil : try PostgresRows.token(r, 0, from: 0, kind, of: holder, vault)
    }

    /// A device-level token this transaction read with its device
    /// (`device`) or wrote is that record's: `owner_key` is unique and a
    /// function of the token and kind alone, so no other row can hold it (a
    /// launch's re-registration asks exactly this, at no round trip).
    /// Otherwise read by `owner_key`.
    package func owner(of token: String, _ kind: TokenKind) throws -> TokenHolder? {
        if let id = cache.holder(of: token, kind) { return TokenHolder(id: id, activityId: nil) }
        let r = try connection.query("""
            SELECT user_id, app_id, device_id, activity_id, sealed FROM registry_tokens WHERE owner_key = $1
            """, [.bytea(vault.ownerKey(token, kind))])
        guard r.rowCount == 1, let sealed = try r.bytes(0, 4) else { return nil }
        let owner = try PostgresRows.holder(r, 0, from: 0, activity: kind == .activity ? 3 : nil)
        return try vault.open(sealed, in: TokenSlot(kind, owner)).hasSameBytes(as: token) ? owner : nil
    }

    package func deviceValues(of user: String, app: String) throws -> [(RecordID, DeviceValue)] {
        let r = try connection.query("""
            SELECT device_id, \(PostgresRows.deviceColumns) FROM registry_devices
            WHERE user_id = $1 AND app_id = $2 ORDER BY device_id
            """, [.text(user), .text(app)])
        return try (0..<r.rowCount).map { row in
            (RecordID(user: user, app: app, device: try r.string(row, 0) ?? ""), try PostgresRows.deviceValue(r, row, from: 1))
        }
    }

    package func activities(_ id: RecordID) throws -> [String] {
        let r = try connection.query("""
            SELECT activity_id FROM registry_tokens WHERE \(Self.recordMatch) AND kind = 3 ORDER BY activity_id
            """, Self.key(id))
        return try (0..<r.rowCount).map { try r.string($0, 0) ?? "" }
    }

    /// The device-level tokens and the activity count: as this transaction
    /// read them with the device and wrote them since (`RecordCache`), or
    /// in one statement.
    package func join(_ id: RecordID, _ value: DeviceValue) throws -> DeviceRecord {
        if let tokens = cache.tokens(id) {
            var value = value
            value.activityCount = tokens.activityCount
            return PostgresRows.record(id, value, push: tokens.push, pushToStart: tokens.pushToStart)
        }
        let r = try connection.query("""
            SELECT kind, sealed, environment, updated_at FROM registry_tokens
            WHERE \(Self.recordMatch) AND kind IN (1, 2)
            UNION ALL
            SELECT 0, NULL, NULL, count(*) FROM registry_tokens WHERE \(Self.recordMatch) AND kind = 3
            """, Self.key(id))
        var push: TokenValue?, pushToStart: TokenValue?
        var value = value
        for row in 0..<r.rowCount {
            switch try r.int64(row, 0) {
            case 1: push = try PostgresRows.token(r, row, from: 1, .push, of: TokenHolder(id: id, activityId: nil), vault)
            case 2: pushToStart = try PostgresRows.token(r, row, from: 1, .pushToStart, of: TokenHolder(id: id, activityId: nil), vault)
            default: value.activityCount = Int(try r.int64(row, 3) ?? 0)
            }
        }
        return PostgresRows.record(id, value, push: push, pushToStart: pushToStart)
    }

    // MARK: Devices

    package func save(_ id: RecordID, _ value: DeviceValue, previous: DeviceValue?) throws {
        cache.wroteDevice(id)
        try connection.queryLater("""
            INSERT INTO registry_devices (user_id, app_id, device_id, \(PostgresRows.deviceColumns))
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
            ON CONFLICT (user_id, app_id, device_id) DO UPDATE SET
                platform = EXCLUDED.platform, environment = EXCLUDED.environment,
                os_version = EXCLUDED.os_version, app_version = EXCLUDED.app_version,
                created_at = EXCLUDED.created_at, last_seen_at = EXCLUDED.last_seen_at, sequence = EXCLUDED.sequence
            """, Self.key(id) + PostgresRows.deviceParameters(value))
    }

    /// The device's tokens go first (push, push-to-start, then activities
    /// in id order, as their events are written), then the device.
    @discardableResult
    package func deleteDevice(_ id: RecordID, reason: HistoryEvent.Reason) throws -> SweepCounts {
        cache.forget(id)
        let deleted = try connection.queries([
            PostgresStatement("DELETE FROM registry_tokens WHERE \(Self.recordMatch) RETURNING kind, activity_id, sealed",
                              Self.key(id)),
            PostgresStatement("DELETE FROM registry_devices WHERE \(Self.recordMatch)", Self.key(id)),
        ])
        let tokens = deleted[0], gone = deleted[1]
        guard gone.affectedRows == 1 else { return SweepCounts() }
        var removed: [(kind: TokenKind, activity: String, sealed: [UInt8])] = []
        for row in 0..<tokens.rowCount {
            guard let kind = TokenKind(rawValue: UInt8(clamping: try tokens.int64(row, 0) ?? 0)),
                  let sealed = try tokens.bytes(row, 2) else { continue }
            removed.append((kind, try tokens.string(row, 1) ?? "", sealed))
        }
        removed.sort { a, b in
            a.kind != b.kind ? a.kind.rawValue < b.kind.rawValue : a.activity.utf8.lexicographicallyPrecedes(b.activity.utf8)
        }
        var counts = SweepCounts(devices: 1)
        for token in removed {
            switch token.kind {
            case .push: break
            case .pushToStart: counts.pushToStartTokens += 1
            case .activity: counts.activityTokens += 1
            }
            let activity = token.kind == .activity ? token.activity : nil
            try recordEvent(id, token.kind, activity: activity, .removed, reason: reason, feedback: nil,
                            token: try vault.open(token.sealed, in: TokenSlot(token.kind, TokenHolder(id: id, activityId: activity))))
        }
        return counts
    }

    // MARK: Tokens

    package func putToken(_ kind: TokenKind, _ id: RecordID, _ value: TokenValue) throws {
        try put(kind, TokenHolder(id: id, activityId: nil), value)
    }

    package func putActivityToken(_ activity: String, _ id: RecordID, _ value: TokenValue) throws {
        try put(.activity, TokenHolder(id: id, activityId: activity), value)
    }

    /// A refresh of the same token rewrites its environment and time only;
    /// a new or replaced one is sealed, indexed by its owner key, and is a
    /// `registered` or `rotated` event.
    private func put(_ kind: TokenKind, _ holder: TokenHolder, _ value: TokenValue) throws {
        let old = try token(kind, of: holder)
        // What the row holds once this write runs; an activity token changes the count.
        if kind == .activity { cache.forget(holder.id) } else { cache.wrote(kind, holder.id, value) }
        if let old, old.token.hasSameBytes(as: value.token) {
            try connection.queryLater("""
                UPDATE registry_tokens SET environment = $6, updated_at = $7 WHERE \(Self.holderMatch)
                """, Self.key(kind, holder) + [.text(value.environment.rawValue), .int64(value.updatedAt.milliseconds)])
            return
        }
        try connection.queryLater("""
            INSERT INTO registry_tokens (user_id, app_id, device_id, kind, activity_id, sealed, owner_key, environment, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
            ON CONFLICT (user_id, app_id, device_id, kind, activity_id) DO UPDATE SET
                sealed = EXCLUDED.sealed, owner_key = EXCLUDED.owner_key,
                environment = EXCLUDED.environment, updated_at = EXCLUDED.updated_at
            """, Self.key(kind, holder) + [.bytea(vault.seal(value.token, in: TokenSlot(kind, holder))),
                                           .bytea(vault.ownerKey(value.token, kind)),
                                           .text(value.environment.rawValue), .int64(value.updatedAt.milliseconds)])
        try recordEvent(holder.id, kind, activity: holder.activityId, old == nil ? .registered : .rotated,
                        reason: nil, feedback: nil, token: value.token)
    }

    package func setTokenEnvironment(_ kind: TokenKind, of holder: TokenHolder, _ environment: APNsEnvironment) throws {
        cache.forget(holder.id)
        try connection.queryLater("UPDATE registry_tokens SET environment = $6 WHERE \(Self.holderMatch)",
                             Self.key(kind, holder) + [.text(environment.rawValue)])
    }

    @discardableResult
    package func removeToken(_ kind: TokenKind, _ id: RecordID, reason: HistoryEvent.Reason,
                     feedback: FeedbackReason? = nil) throws -> Bool {
        try remove(kind, TokenHolder(id: id, activityId: nil), reason: reason, feedback: feedback)
    }

    @discardableResult
    package func removeActivityToken(_ activity: String, _ id: RecordID, reason: HistoryEvent.Reason,
                             feedback: FeedbackReason? = nil) throws -> Bool {
        try remove(.activity, TokenHolder(id: id, activityId: activity), reason: reason, feedback: feedback)
    }

    private func remove(_ kind: TokenKind, _ holder: TokenHolder, reason: HistoryEvent.Reason,
                        feedback: FeedbackReason?) throws -> Bool {
        cache.forget(holder.id)
        let r = try connection.query("DELETE FROM registry_tokens WHERE \(Self.holderMatch) RETURNING sealed",
                                     Self.key(kind, holder))
        guard r.rowCount == 1, let sealed = try r.bytes(0, 0) else { return false }
        try recordEvent(holder.id, kind, activity: holder.activityId, .removed, reason: reason, feedback: feedback,
                        token: try vault.open(sealed, in: TokenSlot(kind, holder)))
        return true
    }

    // MARK: Tombstones

    package func putTombstone(_ id: RecordID, sequence: UInt64, maxTombstones: Int) throws {
        let old = try tombstone(id)
        if old == nil {
            let r = try connection.query("""
                SELECT device_id FROM registry_tombstones WHERE user_id = $1 AND app_id = $2
                ORDER BY deleted_at, device_id
                """, [.text(id.user), .text(id.app)])
            let excess = r.rowCount - max(1, maxTombstones) + 1
            if excess > 0 {
                cache.forgetTombstones()
                let oldest = try (0..<excess).map { try r.string($0, 0) ?? "" }
                try connection.queryLater("""
                    DELETE FROM registry_tombstones WHERE user_id = $1 AND app_id = $2 AND device_id = ANY($3::text[])
                    """, [.text(id.user), .text(id.app), PostgresRows.textArray(oldest)])
            }
        }
        try writeTombstone(id, TombstoneValue(sequence: max(sequence, old?.sequence ?? 0), deletedAt: now))
    }

    package func restoreTombstone(_ t: Tombstone) throws {
        try writeTombstone(try recordID(t.userId, appId: t.appId, t.deviceId),
                           TombstoneValue(sequence: t.sequence, deletedAt: t.deletedAt))
    }

    private func writeTombstone(_ id: RecordID, _ value: TombstoneValue) throws {
        cache.forget(id)
        try connection.queryLater("""
            INSERT INTO registry_tombstones (user_id, app_id, device_id, sequence, deleted_at) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (user_id, app_id, device_id) DO UPDATE SET
                sequence = EXCLUDED.sequence, deleted_at = EXCLUDED.deleted_at
            """, Self.key(id) + [.text(String(value.sequence)), .int64(value.deletedAt.milliseconds)])
    }

    // MARK: History

    /// Appends the event as the user's newest, at `now` or, when the
    /// user's newest event is not older (another node's clock ran ahead),
    /// at that event's time with the next counter; and drops what passes
    /// `HistoryEvent.maxPerUser`. One statement: the trim counts the old
    /// events only (it cannot see the one inserted beside it), keeping the
    /// newest `maxPerUser - 1` of them.
    package func recordEvent(_ id: RecordID, _ kind: TokenKind, activity: String?, _ action: HistoryEvent.Action,
                     reason: HistoryEvent.Reason? = nil, feedback: FeedbackReason? = nil, token: String) throws {
        guard !restoring else { return }
        try connection.queryLater("""
            WITH newest AS (
                SELECT at, counter FROM registry_history WHERE user_id = $1 ORDER BY at DESC, counter DESC LIMIT 1
            ), added AS (
                INSERT INTO registry_history
                    (user_id, at, counter, app_id, device_id, kind, activity_id, action, reason, feedback_reason, fingerprint)
                SELECT $1,
                       CASE WHEN newest.at IS NULL OR newest.at < $2 THEN $2 ELSE newest.at END,
                       CASE WHEN newest.at IS NULL OR newest.at < $2 THEN 0 ELSE newest.counter + 1 END,
                       $3, $4, $5, $6, $7, $8, $9, $10
                FROM (SELECT 1) AS one LEFT JOIN newest ON true
            )
            DELETE FROM registry_history WHERE user_id = $1 AND (at, counter) < (
                SELECT at, counter FROM registry_history WHERE user_id = $1
                ORDER BY at DESC, counter DESC OFFSET \(HistoryEvent.maxPerUser - 2) LIMIT 1)
            """, [.text(id.user), .int64(now.milliseconds), .text(id.app), .text(id.device),
                  .text(HistoryEvent.Kind(kind).rawValue), activity.map { .text($0) }, .text(action.rawValue),
                  action == .removed ? reason.map { .text($0.rawValue) } : nil,
                  reason == .feedback ? feedback.map { .text($0.rawValue) } : nil,
                  .text(HistoryEvent.fingerprint(of: token))])
    }

    package func restoreHistory(_ e: HistoryEvent, occurrence: Int) throws {
        _ = try recordID(e.userId, appId: e.appId, e.deviceId)
        let same = try connection.query("""
            SELECT counter, app_id, device_id, kind, activity_id, action, reason, feedback_reason, fingerprint
            FROM registry_history WHERE user_id = $1 AND at = $2
            """, [.text(e.userId), .int64(e.at.milliseconds)])
        var counter: Int64 = 0
        var identical = 0
        for row in 0..<same.rowCount {
            counter = max(counter, (try same.int64(row, 0) ?? 0) + 1)
            let fields = try (1...8).map { try same.string(row, $0) }
            if fields == Self.historyFields(e) { identical += 1 }
        }
        guard identical < occurrence else { return }
        try connection.queryLater("""
            INSERT INTO registry_history
                (user_id, at, counter, app_id, device_id, kind, activity_id, action, reason, feedback_reason, fingerprint)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
            """, [.text(e.userId), .int64(e.at.milliseconds), .int64(counter)] + Self.historyFields(e).map { $0.map { .text($0) } })
        try connection.queryLater("""
            DELETE FROM registry_history WHERE user_id = $1 AND (at, counter) < (
                SELECT at, counter FROM registry_history WHERE user_id = $1
                ORDER BY at DESC, counter DESC OFFSET \(HistoryEvent.maxPerUser - 1) LIMIT 1)
            """, [.text(e.userId)])
    }

    /// An event's columns after (user, at, counter), as text.
    private static func historyFields(_ e: HistoryEvent) -> [String?] {
        [e.appId, e.deviceId, e.kind.rawValue, e.activityId, e.action.rawValue, e.reason?.rawValue,
         e.feedbackReason?.rawValue, e.tokenFingerprint]
    }
}

/// What one write transaction read with a device (its tombstone, its
/// device-level tokens and activity count; `nil` inside means "read: there
/// is none"), kept as this transaction's writes change it, so the rules'
/// next reads of them, of a device-level token's owner and of the record's
/// join cost no round trip. A write the cache cannot follow (an activity
/// token, an environment set, a removal, a deletion, a tombstone) forgets
/// the record's entry first. It also holds the read sent ahead with the
/// transaction's first round trip until `device` takes it; any write of
/// that record before then drops it. The cache lives as long as its
/// transaction (a retry starts with a new writer).
package final class RecordCache {
    /// A record's device-level tokens and activity count.
    package struct Tokens {
        var push: TokenValue?
        var pushToStart: TokenValue?
        var activityCount: Int
    }

    private var tombstones: [[UInt8]: TombstoneValue?] = [:]
    private var tokens: [[UInt8]: (id: RecordID, tokens: Tokens)] = [:]
    private var readAhead: (id: RecordID, result: PostgresResult)?

    /// Holds `result`, `PostgresRecordWriter.deviceRead(id)` answered in
    /// the transaction's first round trip, for the first `device(id)`.
    package func readAhead(_ id: RecordID, _ result: PostgresResult) { readAhead = (id, result) }

    /// The read sent ahead for `id`, once; `nil` when none is held for it.
    func takeReadAhead(_ id: RecordID) -> PostgresResult? {
        guard let held = readAhead, held.id.sameBytes(id) else { return nil }
        readAhead = nil
        return held.result
    }

    func remember(_ id: RecordID, tombstone: TombstoneValue?, tokens: Tokens) {
        tombstones[id.identity] = .some(tombstone)
        self.tokens[id.identity] = (id, tokens)
    }

    /// `.some(nil)`: known to be absent; `nil`: not known.
    func tombstone(_ id: RecordID) -> TombstoneValue?? { tombstones[id.identity] }

    /// The record's device-level token of `kind` (push or push-to-start),
    /// as `tombstone` answers.
    func token(_ kind: TokenKind, _ id: RecordID) -> TokenValue?? {
        guard let entry = tokens[id.identity] else { return nil }
        switch kind {
        case .push: return .some(entry.tokens.push)
        case .pushToStart: return .some(entry.tokens.pushToStart)
        case .activity: return nil
        }
    }

    /// The record whose known device-level token of `kind` is exactly `token`, if any.
    func holder(of token: String, _ kind: TokenKind) -> RecordID? {
        guard kind != .activity else { return nil }
        return tokens.values.first { entry in
            (kind == .push ? entry.tokens.push : entry.tokens.pushToStart)?.token.hasSameBytes(as: token) == true
        }?.id
    }

    /// The record's tokens and activity count, when known.
    func tokens(_ id: RecordID) -> Tokens? { tokens[id.identity]?.tokens }

    /// The record's device-level token of `kind` is now `value`.
    func wrote(_ kind: TokenKind, _ id: RecordID, _ value: TokenValue) {
        wroteDevice(id)
        switch kind {
        case .push: tokens[id.identity]?.tokens.push = value
        case .pushToStart: tokens[id.identity]?.tokens.pushToStart = value
        case .activity: forget(id)
        }
    }

    /// The record's device row was written: a read held for it is stale.
    func wroteDevice(_ id: RecordID) {
        if readAhead?.id.sameBytes(id) == true { readAhead = nil }
    }

    func forget(_ id: RecordID) {
        wroteDevice(id)
        tombstones[id.identity] = nil
        tokens[id.identity] = nil
    }

    func forgetTombstones() {
        readAhead = nil
        tombstones.removeAll()
    }
}
