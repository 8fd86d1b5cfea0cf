import RegistryCore
import Postgres

/// `export` inside one snapshot: devices in (user, app, device) byte order
/// with their tokens, then tombstones, then history (each user's oldest
/// first), handed on in pages of at most `pageSize` records.
struct PostgresExport {
    let connection: PostgresConnection
    let vault: TokenVault
    var pageSize = 500

    func run(_ emit: ([ExportedRecord]) throws -> Void) throws {
        try devices(emit)
        try tombstones(emit)
        try history(emit)
    }

    private func devices(_ emit: ([ExportedRecord]) throws -> Void) throws {
        let reads = PostgresReads(connection: connection, vault: vault, apps: PostgresAppCatalog(declared: .defaultOnly), cursorSecret: [])
        var after: RecordID?
        while true {
            var condition = "true"
            var parameters: [PostgresValue?] = []
            if let after {
                condition = "(d.user_id, d.app_id, d.device_id) > ($1, $2, $3)"
                parameters = [.text(after.user), .text(after.app), .text(after.device)]
            }
            let records = try reads.records(where: condition, parameters, keyOrder: true, limit: pageSize)
            guard let last = records.last else { return }
            let lastID = RecordID(user: last.userId, app: last.appId, device: last.deviceId)
            var activityCondition = "kind = 3 AND (user_id, app_id, device_id) <= ($1, $2, $3)"
            var activityParameters: [PostgresValue?] = [.text(lastID.user), .text(lastID.app), .text(lastID.device)]
            if let after {
                activityCondition += " AND (user_id, app_id, device_id) > ($4, $5, $6)"
                activityParameters += [.text(after.user), .text(after.app), .text(after.device)]
            }
            let r = try connection.query("""
                SELECT user_id, app_id, device_id, activity_id, sealed, environment, updated_at FROM registry_tokens
                WHERE \(activityCondition) ORDER BY user_id, app_id, device_id, activity_id
                """, activityParameters)
            var tokens: [[UInt8]: [ActivityToken]] = [:]  // by record key: ids compare as bytes
            for row in 0..<r.rowCount {
                let id = RecordID(user: try r.string(row, 0) ?? "", app: try r.string(row, 1) ?? "", device: try r.string(row, 2) ?? "")
                let token = try PostgresRows.token(r, row, from: 4, .activity,
                                                   of: TokenHolder(id: id, activityId: try r.string(row, 3) ?? ""), vault)
                tokens[id.identity, default: []].append(ActivityToken(
                    activityId: try r.string(row, 3) ?? "", userId: id.user, deviceId: id.device, token: token.token,
                    environment: token.environment, lastSeenAt: token.updatedAt, appId: id.app))
            }
            try emit(records.map { record in
                .device(record, activityTokens: tokens[RecordID(user: record.userId, app: record.appId, device: record.deviceId).identity] ?? [])
            })
            after = lastID
        }
    }

    private func tombstones(_ emit: ([ExportedRecord]) throws -> Void) throws {
        var after: [PostgresValue?] = [.text(""), .text(""), .text("")]
        while true {
            let r = try connection.query("""
                SELECT user_id, app_id, device_id, sequence, deleted_at FROM registry_tombstones
                WHERE (user_id, app_id, device_id) > ($1, $2, $3) ORDER BY user_id, app_id, device_id LIMIT \(pageSize)
                """, after)
            guard r.rowCount > 0 else { return }
            try emit(try (0..<r.rowCount).map { row in
                .tombstone(Tombstone(userId: try r.string(row, 0) ?? "", deviceId: try r.string(row, 2) ?? "",
                                     sequence: try PostgresRows.sequence(r, row, 3) ?? 0,
                                     deletedAt: Timestamp(milliseconds: try r.int64(row, 4) ?? 0),
                                     appId: try r.string(row, 1) ?? ""))
            })
            let last = r.rowCount - 1
            after = [.text(try r.string(last, 0) ?? ""), .text(try r.string(last, 1) ?? ""), .text(try r.string(last, 2) ?? "")]
        }
    }

    private func history(_ emit: ([ExportedRecord]) throws -> Void) throws {
        var after: [PostgresValue?] = [.text(""), .int64(Int64.min), .int64(Int64.min)]
        while true {
            let r = try connection.query("""
                SELECT at, app_id, device_id, kind, activity_id, action, reason, feedback_reason, fingerprint,
                       user_id, counter
                FROM registry_history WHERE (user_id, at, counter) > ($1, $2, $3)
                ORDER BY user_id, at, counter LIMIT \(pageSize)
                """, after)
            guard r.rowCount > 0 else { return }
            try emit(try (0..<r.rowCount).map { row in
                .history(try PostgresReads.historyEvent(r, row, userId: try r.string(row, 9) ?? ""))
            })
            let last = r.rowCount - 1
            after = [.text(try r.string(last, 9) ?? ""), .int64(try r.int64(last, 0) ?? 0), .int64(try r.int64(last, 10) ?? 0)]
        }
    }
}
