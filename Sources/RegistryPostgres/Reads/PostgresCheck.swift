import RegistryCore
import Postgres

/// `check` on PostgreSQL, in one snapshot. The schema's keys and
/// constraints keep what LMDB's index checker verifies (one owner entry
/// per token, tokens only on existing devices); what remains is what only
/// the registry knows: each token opens with the token keys and is indexed
/// by its own owner key, and the caps hold.
struct PostgresCheck {
    struct Caps: Sendable {
        let devices: Int
        let activities: Int
        let tombstones: Int
    }

    let connection: PostgresConnection
    let vault: TokenVault
    let caps: Caps
    let limit: Int

    /// The problems (at most `limit`) and how many entries were visited.
    func run() throws -> (problems: [String], visited: Int) {
        var problems: [String] = []
        var visited = 0
        func report(_ problem: String) -> Bool {
            if problems.count < limit { problems.append(problem) }
            return problems.count < limit
        }
        var after: [PostgresValue?] = [.text(""), .text(""), .text(""), .int64(0), .text("")]
        scan: while true {
            let r = try connection.query("""
                SELECT user_id, app_id, device_id, kind, activity_id, sealed, owner_key FROM registry_tokens
                WHERE (user_id, app_id, device_id, kind, activity_id) > ($1, $2, $3, $4, $5)
                ORDER BY user_id, app_id, device_id, kind, activity_id LIMIT 1000
                """, after)
            guard r.rowCount > 0 else { break }
            for row in 0..<r.rowCount {
                visited += 1
                let where_ = "\"\(try r.string(row, 0) ?? "")\"/\"\(try r.string(row, 1) ?? "")\"/\"\(try r.string(row, 2) ?? "")\""
                guard let kind = TokenKind(rawValue: UInt8(clamping: try r.int64(row, 3) ?? 0)),
                      let sealed = try r.bytes(row, 5), let ownerKey = try r.bytes(row, 6) else { continue }
                let token: String
                do {
                    let holder = try PostgresRows.holder(r, row, from: 0, activity: kind == .activity ? 4 : nil)
                    token = try vault.open(sealed, in: TokenSlot(kind, holder))
                } catch {
                    if !report("\(kind) token of \(where_) cannot be opened: \(error)") { break scan }
                    continue
                }
                if ownerKey != vault.ownerKey(token, kind), !report("\(kind) token of \(where_) is indexed under another token's owner key") {
                    break scan
                }
            }
            let last = r.rowCount - 1
            after = [.text(try r.string(last, 0) ?? ""), .text(try r.string(last, 1) ?? ""), .text(try r.string(last, 2) ?? ""),
                     .int64(try r.int64(last, 3) ?? 0), .text(try r.string(last, 4) ?? "")]
        }
        let overCaps = try connection.query("""
            SELECT 'user "' || user_id || '" holds ' || count(*) || ' devices of app "' || app_id || '" (cap $1)'
                FROM registry_devices GROUP BY user_id, app_id HAVING count(*) > $1
            UNION ALL
            SELECT 'device "' || user_id || '"/"' || app_id || '"/"' || device_id || '" holds ' || count(*) || ' activity tokens (cap $2)'
                FROM registry_tokens WHERE kind = 3 GROUP BY user_id, app_id, device_id HAVING count(*) > $2
            UNION ALL
            SELECT 'user "' || user_id || '" holds ' || count(*) || ' tombstones of app "' || app_id || '" (cap $3)'
                FROM registry_tombstones GROUP BY user_id, app_id HAVING count(*) > $3
            UNION ALL
            SELECT 'user "' || user_id || '" holds ' || count(*) || ' history events (bound $4)'
                FROM registry_history GROUP BY user_id HAVING count(*) > $4
            LIMIT $5
            """, [.int64(Int64(caps.devices)), .int64(Int64(caps.activities)), .int64(Int64(caps.tombstones)),
                  .int64(Int64(HistoryEvent.maxPerUser)), .int64(Int64(max(0, limit - problems.count)))])
        for row in 0..<overCaps.rowCount { _ = report(try overCaps.string(row, 0) ?? "") }
        visited += try connection.query("SELECT (SELECT count(*) FROM registry_devices) + (SELECT count(*) FROM registry_tombstones)")
            .int64(0, 0).map(Int.init) ?? 0
        return (problems, visited)
    }
}
