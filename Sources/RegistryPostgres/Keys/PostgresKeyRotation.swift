import RegistryCore
import Postgres

/// One bounded step of re-sealing tokens under the current key.
enum PostgresKeyRotation {
    /// Re-seals what an older key sealed among the next `batchSize` tokens
    /// after `after` (their key columns; from the start when nil). Returns
    /// the counts and where to resume (nil when done).
    static func reseal(_ writer: PostgresRecordWriter, after: [PostgresValue?]?,
                       batchSize: Int) throws -> (resealed: Int, visited: Int, resume: [PostgresValue?]?) {
        let connection = writer.connection, vault = writer.vault
        let r = try connection.query("""
            SELECT user_id, app_id, device_id, kind, activity_id, sealed FROM registry_tokens
            WHERE (user_id, app_id, device_id, kind, activity_id) > ($1, $2, $3, $4, $5)
            ORDER BY user_id, app_id, device_id, kind, activity_id LIMIT \(max(1, batchSize))
            """, after ?? [.text(""), .text(""), .text(""), .int64(0), .text("")])
        var resealed = 0
        var last: [PostgresValue?]?
        for row in 0..<r.rowCount {
            let key: [PostgresValue?] = [.text(try r.string(row, 0) ?? ""), .text(try r.string(row, 1) ?? ""),
                                         .text(try r.string(row, 2) ?? ""), .int64(try r.int64(row, 3) ?? 0),
                                         .text(try r.string(row, 4) ?? "")]
            last = key
            guard let kind = TokenKind(rawValue: UInt8(clamping: try r.int64(row, 3) ?? 0)),
                  let sealed = try r.bytes(row, 5), vault.keyID(of: sealed[...]) != vault.ring.currentKeyID else { continue }
            let slot = TokenSlot(kind, try PostgresRows.holder(r, row, from: 0, activity: kind == .activity ? 4 : nil))
            let token = try vault.open(sealed, in: slot)
            try connection.query("""
                UPDATE registry_tokens SET sealed = $6
                WHERE user_id = $1 AND app_id = $2 AND device_id = $3 AND kind = $4 AND activity_id = $5
                """, key + [.bytea(vault.seal(token, in: slot))])
            resealed += 1
        }
        return (resealed, r.rowCount, r.rowCount < max(1, batchSize) ? nil : last)
    }
}
