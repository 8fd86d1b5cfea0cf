import Codecs
import RegistryCore
import Postgres

/// The PostgreSQL store's reads, on one pooled connection (on its own
/// thread). Each read is one statement, so it sees one snapshot without a
/// transaction around it.
struct PostgresReads: RegistryReads {
    let connection: PostgresConnection
    let vault: TokenVault
    let apps: PostgresAppCatalog
    let cursorSecret: [UInt8]

    /// A device per row with its device-level tokens and activity count,
    /// for the devices matching `condition` (on `d`), ordered as the
    /// contract lists a user's devices.
    /// `keyOrder` orders by (user, app, device) instead (export pages), with `limit` rows at most.
    func records(where condition: String, _ parameters: [PostgresValue?], keyOrder: Bool = false,
                 limit: Int? = nil) throws -> [DeviceRecord] {
        let r = try connection.query(Self.recordsSelect + """
            WHERE \(condition)
            ORDER BY \(keyOrder ? "d.user_id, d.app_id, d.device_id" : "d.user_id, d.last_seen_at DESC, d.app_id, d.device_id")
            \(limit.map { "LIMIT \($0)" } ?? "")
            """, parameters)
        var records: [DeviceRecord] = []
        records.reserveCapacity(r.rowCount)
        for row in 0..<r.rowCount {
            let id = RecordID(user: try r.string(row, 0) ?? "", app: try r.string(row, 1) ?? "", device: try r.string(row, 2) ?? "")
            let value = try PostgresRows.deviceValue(r, row, from: 3, activityCount: Int(try r.int64(row, 16) ?? 0))
            let holder = TokenHolder(id: id, activityId: nil)
            let push = r.isNull(row, 10) ? nil : try PostgresRows.token(r, row, from: 10, .push, of: holder, vault)
            let start = r.isNull(row, 13) ? nil : try PostgresRows.token(r, row, from: 13, .pushToStart, of: holder, vault)
            records.append(PostgresRows.record(id, value, push: push, pushToStart: start))
        }
        return records
    }

    /// `records`' statement up to its condition, built once (a lookup
    /// built the column list anew each time).
    private static let recordsSelect = """
        SELECT d.user_id, d.app_id, d.device_id, \(PostgresRows.deviceColumns(of: "d")),
            p.sealed, p.environment, p.updated_at, s.sealed, s.environment, s.updated_at,
            (SELECT count(*) FROM registry_tokens a
             WHERE a.user_id = d.user_id AND a.app_id = d.app_id AND a.device_id = d.device_id AND a.kind = 3)
        FROM registry_devices d
        LEFT JOIN registry_tokens p ON p.user_id = d.user_id AND p.app_id = d.app_id AND p.device_id = d.device_id
            AND p.kind = 1 AND p.activity_id = ''
        LEFT JOIN registry_tokens s ON s.user_id = d.user_id AND s.app_id = d.app_id AND s.device_id = d.device_id
            AND s.kind = 2 AND s.activity_id = ''

        """

    func device(userId: String, appId: String, deviceId: String) throws -> DeviceRecord? {
        try records(where: "d.user_id = $1 AND d.app_id = $2 AND d.device_id = $3",
                    [.text(userId), .text(appId), .text(deviceId)]).first
    }

    func devices(userId: String, appId: String?) throws -> [DeviceRecord] {
        guard let appId else { return try records(where: "d.user_id = $1", [.text(userId)]) }
        return try records(where: "d.user_id = $1 AND d.app_id = $2", [.text(userId), .text(appId)])
    }

    /// One statement for all the users; grouped here (rows come ordered by user).
    func devices(userIds: [String], appId: String?) throws -> [UserDevices] {
        let users = UserDevices.distinctByBytes(userIds)
        guard !users.isEmpty else { return [] }
        var condition = "d.user_id = ANY($1::text[])"
        var parameters: [PostgresValue?] = [PostgresRows.textArray(users)]
        if let appId {
            condition += " AND d.app_id = $2"
            parameters.append(.text(appId))
        }
        var grouped: [UserDevices] = []
        for record in try records(where: condition, parameters) {
            if let last = grouped.last, last.userId.hasSameBytes(as: record.userId) {
                grouped[grouped.count - 1].devices.append(record)
            } else {
                grouped.append(UserDevices(userId: record.userId, devices: [record]))
            }
        }
        return grouped
    }

    /// Keyset pages in (user, app, device) byte order; the cursor names the
    /// last row returned, so a token present for the whole walk appears once.
    func activityTokens(activityId: String, appId: String?, limit: Int, cursor: String?) throws -> ActivityTokenPage {
        var condition = "kind = 3 AND activity_id = $1"
        var parameters: [PostgresValue?] = [.text(activityId)]
        if let appId {
            parameters.append(.text(appId))
            condition += " AND app_id = $\(parameters.count)"
        }
        if let cursor {
            guard let after = ActivityCursor.decode(cursor, activity: activityId, secret: cursorSecret)?.after else {
                throw RegistryError.invalidField(field: "cursor", message: "is not a cursor this registry issued for this activity")
            }
            parameters += [.text(after.user), .text(after.app), .text(after.device)]
            let n = parameters.count
            condition += " AND (user_id, app_id, device_id) > ($\(n - 2), $\(n - 1), $\(n))"
        }
        let pageSize = min(max(limit, 1), 1_000)
        let r = try connection.query("""
            SELECT user_id, app_id, device_id, sealed, environment, updated_at FROM registry_tokens
            WHERE \(condition) ORDER BY user_id, app_id, device_id LIMIT \(pageSize + 1)
            """, parameters)
        var tokens: [ActivityToken] = []
        var unreadable = 0
        var last: RecordID?
        for row in 0..<min(r.rowCount, pageSize) {
            let holder = TokenHolder(id: try PostgresRows.holder(r, row, from: 0, activity: nil).id, activityId: activityId)
            last = holder.id
            let token: TokenValue
            do {
                token = try PostgresRows.token(r, row, from: 3, .activity, of: holder, vault)
            } catch is StoredValueError {
                unreadable += 1
                continue
            }
            tokens.append(ActivityToken(activityId: activityId, userId: holder.id.user, deviceId: holder.id.device,
                                        token: token.token, environment: token.environment, lastSeenAt: token.updatedAt,
                                        appId: holder.id.app))
        }
        guard r.rowCount > pageSize, let last else { return ActivityTokenPage(tokens: tokens, nextCursor: nil, unreadable: unreadable) }
        return ActivityTokenPage(tokens: tokens,
                                 nextCursor: ActivityCursor(after: last).encode(activity: activityId, secret: cursorSecret),
                                 unreadable: unreadable)
    }

    func history(userId: String, limit: Int) throws -> [HistoryEvent] {
        let r = try connection.query("""
            SELECT at, app_id, device_id, kind, activity_id, action, reason, feedback_reason, fingerprint
            FROM registry_history WHERE user_id = $1 ORDER BY at DESC, counter DESC LIMIT $2
            """, [.text(userId), .int64(Int64(min(max(limit, 1), HistoryEvent.maxPerUser)))])
        return try (0..<r.rowCount).map { row in try Self.historyEvent(r, row, userId: userId) }
    }

    /// A history row (at, app_id, … fingerprint) as an event.
    static func historyEvent(_ r: PostgresResult, _ row: Int, userId: String) throws -> HistoryEvent {
        guard let kind = HistoryEvent.Kind(rawValue: try r.string(row, 3) ?? ""),
              let action = HistoryEvent.Action(rawValue: try r.string(row, 5) ?? "") else {
            throw StoredValueError(what: "history row", reason: "unknown kind or action")
        }
        return HistoryEvent(at: Timestamp(milliseconds: try r.int64(row, 0) ?? 0), userId: userId,
                            appId: try r.string(row, 1) ?? "", deviceId: try r.string(row, 2) ?? "", kind: kind,
                            activityId: try r.string(row, 4), action: action,
                            reason: try r.string(row, 6).flatMap(HistoryEvent.Reason.init(rawValue:)),
                            feedbackReason: try r.string(row, 7).flatMap(FeedbackReason.init(rawValue:)),
                            tokenFingerprint: try r.string(row, 8) ?? "")
    }

    /// One grouped count over the fan-out index; no sealed value is read.
    func activityTokenCounts(activityId: String) throws -> [ActivityTokenCount] {
        let r = try connection.query("""
            SELECT app_id, environment, count(*) FROM registry_tokens
            WHERE kind = 3 AND activity_id = $1 GROUP BY app_id, environment
            """, [.text(activityId)])
        return ActivityTokenCount.inOrder(try (0..<r.rowCount).map { row in
            guard let environment = APNsEnvironment(rawValue: try r.string(row, 1) ?? "") else {
                throw StoredValueError(what: "token row", reason: "unknown environment")
            }
            return ActivityTokenCount(appId: try r.string(row, 0) ?? "", environment: environment,
                                      tokens: Int(try r.int64(row, 2) ?? 0))
        })
    }

    /// One grouped count over `registry_history_at`'s range; the bucket is
    /// `RemovalCount.bucketStart`'s arithmetic, in SQL.
    func removalCounts(from: Timestamp, to: Timestamp, bucket: Duration) throws -> [RemovalCount] {
        guard from < to else { return [] }
        let width = max(1, from.adding(bucket).milliseconds - from.milliseconds)
        let r = try connection.query("""
            SELECT $1::bigint + (at - $1::bigint) / $3::bigint * $3::bigint, reason, feedback_reason, count(*)
            FROM registry_history WHERE at >= $1 AND at < $2 AND action = 'removed'
            GROUP BY 1, 2, 3
            """, [.int64(from.milliseconds), .int64(to.milliseconds), .int64(width)])
        return try (0..<r.rowCount).map { row in
            guard let reason = HistoryEvent.Reason(rawValue: try r.string(row, 1) ?? "") else {
                throw StoredValueError(what: "history row", reason: "unknown reason")
            }
            return RemovalCount(bucketStart: Timestamp(milliseconds: try r.int64(row, 0) ?? 0), reason: reason,
                                feedbackReason: try r.string(row, 2).flatMap(FeedbackReason.init(rawValue:)),
                                count: Int(try r.int64(row, 3) ?? 0))
        }
    }

    func storedApps() throws -> [String] { try apps.all(connection) }

    func stats() throws -> StoreStats { try Self.stats(connection) }

    /// The counts, which open no token (so no token key is needed).
    static func stats(_ connection: PostgresConnection) throws -> StoreStats {
        let r = try connection.query("""
            SELECT (SELECT count(*) FROM registry_devices),
                   (SELECT count(*) FROM registry_tokens WHERE kind = 1),
                   (SELECT count(*) FROM registry_tokens WHERE kind = 2),
                   (SELECT count(*) FROM registry_tokens WHERE kind = 3),
                   (SELECT count(*) FROM registry_tombstones),
                   (SELECT count(*) FROM registry_history),
                   pg_database_size(current_database()),
                   (SELECT value FROM registry_meta WHERE name = $1)
            """, [.text(PostgresSchema.Meta.lastSweepAt)])
        let count = { (column: Int) in Int(try r.int64(0, column) ?? 0) }
        var lastSweep: Timestamp?
        if let bytes = try r.bytes(0, 7), let text = String(validating: bytes, as: UTF8.self), let ms = Int64(text) {
            lastSweep = Timestamp(milliseconds: ms)
        }
        // No map: the database's size is both what is reserved and what is used.
        let size = try count(6)
        return StoreStats(devices: try count(0), pushTokens: try count(1), pushToStartTokens: try count(2),
                          activityTokens: try count(3), tombstones: try count(4), historyEvents: try count(5),
                          reservedBytes: size, usedBytes: size, lastSweepAt: lastSweep)
    }

    /// The read that brought this connection is the reachability check;
    /// a standby (read-only) is not a usable primary.
    func checkHealth() throws {
        let r = try connection.query("SELECT pg_is_in_recovery()")
        if try r.bool(0, 0) == true { throw RegistryError.unavailable(reason: "the database is a read-only standby") }
    }
}
