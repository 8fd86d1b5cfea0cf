import RegistryCore
import Foundation
import Lifecycle
import Postgres
import Synchronization

/// This process as a node of the registry (`serve`): a row in
/// `registry_nodes` naming it and the sealing keys it holds, written by a
/// heartbeat once a second, so a token key rotation knows which live node
/// still lacks the new key. A node whose row is older than `liveness` is
/// taken for gone (killed, or cut off from the database); a clean stop
/// removes the row. Times are the database's clock, so nodes' clocks may
/// differ.
final class PostgresNode: Sendable {
    /// Random per store: two stores in one process (tests) are two nodes.
    let id = UUID().uuidString
    static let interval: Duration = .seconds(1)
    /// Seconds without a heartbeat after which a node no longer counts.
    static let liveness = 10
    /// The database's clock, in milliseconds since 1970.
    static let now = "(extract(epoch from clock_timestamp()) * 1000)::bigint"

    /// Started by the store's `start()`; its stop tells whether the row is this node's to remove.
    let heartbeat = PeriodicThread(name: "registry-node-heartbeat", interval: interval)
}

extension PostgresRegistryStore {
    /// One heartbeat: follows a rotation's announcement (reloading the key
    /// file, checked, when the announced key is newer) and records this
    /// node and the keys it holds. Rows of nodes gone for an hour are
    /// removed. Failures wait for the next beat (the database may be away).
    func heartbeat() {
        let keys = sealingKeys, node = self.node
        _ = Blocking.result { [pool] in
            try await pool.withConnection { connection in
                let announced = try PostgresMeta.value(PostgresSchema.Meta.sealingKeyID, connection)?.first
                let vault = keys.forWriting(announced: announced) { try PostgresMeta.verifySealingKeys($0, connection) }
                // A node that cannot seal under the announced key keeps its old row: the rotation waits on it.
                guard vault.sealingRefusal == nil else { return }
                try connection.query("""
                    INSERT INTO registry_nodes (node_id, name, current_key, key_ids, seen_at) VALUES ($1, $2, $3, $4, \(PostgresNode.now))
                    ON CONFLICT (node_id) DO UPDATE SET current_key = EXCLUDED.current_key, key_ids = EXCLUDED.key_ids,
                        seen_at = EXCLUDED.seen_at
                    """, [.text(node.id), .text(ProcessIdentity.current.description), .int64(Int64(vault.ring.currentKeyID)),
                          .bytea(vault.ring.sealingKeys.map(\.id))])
                try connection.query("DELETE FROM registry_nodes WHERE seen_at < \(PostgresNode.now) - 3600000")
            }
        }
    }

    /// Removes this node's row (a clean stop).
    func leave() {
        let node = self.node
        _ = Blocking.result { [pool] in
            try await pool.withConnection { try $0.query("DELETE FROM registry_nodes WHERE node_id = $1", [.text(node.id)]) }
        }
    }

    /// Every live node (a heartbeat within `PostgresNode.liveness` seconds).
    public func sealingKeyHolders() async throws -> [SealingKeyHolder] {
        try await translatingErrors {
            try await pool.withConnection { connection in
                let r = try connection.query("""
                    SELECT name, current_key, key_ids FROM registry_nodes
                    WHERE seen_at > \(PostgresNode.now) - \(PostgresNode.liveness * 1000) ORDER BY name
                    """)
                return try (0..<r.rowCount).map { row in
                    SealingKeyHolder(name: try r.string(row, 0) ?? "", currentKeyID: UInt8(clamping: try r.int64(row, 1) ?? 0),
                                     keyIDs: try r.bytes(row, 2) ?? [])
                }
            }
        }
    }
}
