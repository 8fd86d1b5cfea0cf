import RegistryCore
import Postgres

/// Migration 2's data step: every sealed value written before values were
/// bound to their slot (`TokenSlot`; `TokenSealer` format 1, bound to its
/// kind only) is sealed again, bound to its record, at open.
///
/// SQL cannot seal, so the store does it: batches of `batchSize` tokens,
/// each one transaction under a transaction advisory lock (nodes starting
/// together take turns, and each batch finds only what is left), until none
/// is left; then `registry_meta` records it, so later starts skip the scan.
enum PostgresTokenBinding {
    static let batchSize = 500

    static func run(_ connection: PostgresConnection, _ vault: TokenVault, lock: Int64) throws {
        if try PostgresMeta.value(PostgresSchema.Meta.sealedValuesBound, connection) != nil { return }
        while try !connection.retryingTransaction(isolation: .repeatableRead, { try step($0, vault, lock: lock) }) {}
    }

    /// One batch; true once none is left.
    private static func step(_ connection: PostgresConnection, _ vault: TokenVault, lock: Int64) throws -> Bool {
        try connection.advisoryTransactionLock(lock)
        if try PostgresMeta.value(PostgresSchema.Meta.sealedValuesBound, connection) != nil { return true }
        let r = try connection.query("""
            SELECT user_id, app_id, device_id, kind, activity_id, sealed FROM registry_tokens
            WHERE get_byte(sealed, 0) = 1 LIMIT \(batchSize)
            """)
        guard r.rowCount > 0 else {
            try PostgresMeta.put(PostgresSchema.Meta.sealedValuesBound, [1], connection)
            return true
        }
        for row in 0..<r.rowCount {
            guard let kind = TokenKind(rawValue: UInt8(clamping: try r.int64(row, 3) ?? 0)),
                  let sealed = try r.bytes(row, 5) else {
                throw StoredValueError(what: "token row", reason: "no kind or sealed value")
            }
            let holder = try PostgresRows.holder(r, row, from: 0, activity: kind == .activity ? 4 : nil)
            let token = try vault.openUnbound(sealed[...], kind)
            try connection.query("""
                UPDATE registry_tokens SET sealed = $6
                WHERE user_id = $1 AND app_id = $2 AND device_id = $3 AND kind = $4 AND activity_id = $5
                """, [.text(holder.id.user), .text(holder.id.app), .text(holder.id.device), .int64(Int64(kind.rawValue)),
                      .text(holder.activityId ?? ""), .bytea(vault.seal(token, in: TokenSlot(kind, holder)))])
        }
        return false
    }
}
