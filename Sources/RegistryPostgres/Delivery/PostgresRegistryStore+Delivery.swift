import RegistryCore
import Postgres

/// The delivery queue on PostgreSQL (migration 3), shared by every node of
/// the registry: the same behaviour as `LMDBRegistryStore`'s (the
/// transitions are `DeliveryRecord`'s, shared), each write one transaction
/// (`deliveryWriting` says why READ COMMITTED).
///
/// Nodes share the queue without coordinating: a claim locks the due rows
/// it takes with `FOR UPDATE SKIP LOCKED`, so a row another node is
/// claiming is skipped, never waited for, and a row claimed and committed
/// meanwhile no longer matches `state = 'queued'` when re-checked; each
/// delivery is claimed by one node.
extension PostgresRegistryStore: DeliveryStore {
    /// Notifications one sweep transaction deletes at most (with all their deliveries).
    static let notificationSweepBatch = 64
    /// Claims one `abandonClaims` turns to `unknown` at most.
    static let abandonBatch = 10_000

    /// One transaction: the idempotency key first (its primary key makes a
    /// concurrent enqueue with the same key fail with 23505, and its retry
    /// then finds this one's notification), then the notification and its
    /// deliveries (`PostgresDeliveryWrites.insert`, 5,000 rows a statement).
    public func enqueue(_ notification: NotificationRecord, _ deliveries: [DeliveryRecord]) async throws -> EnqueueOutcome {
        guard let id = PostgresDeliveryRows.uuid(notification.id) else { throw DeliveryError.notFound }
        return try await deliveryWriting(retryingUniqueViolations: true) { w in
            let writes = PostgresDeliveryWrites(connection: w.connection)
            if let key = notification.scopedIdempotencyKey, let bare = notification.idempotencyKey {
                // The scoped key first; a bare key (stored before keys were
                // scoped) answers for its own app until its 24 hours pass.
                let r = try w.connection.query("""
                    SELECT k.key, k.notification_id::text, k.created_at, \(PostgresDeliveryRows.notificationColumns(of: "n"))
                    FROM registry_idempotency_keys k LEFT JOIN registry_notifications n ON n.id = k.notification_id
                    WHERE k.key = $1 OR (k.key = $2 AND n.app_id = $3)
                    ORDER BY k.key = $1 DESC
                    """, [.text(key), .text(bare), .text(notification.appId)])
                if r.rowCount > 0 {
                    let createdAt = Timestamp(milliseconds: try r.int64(0, 2) ?? 0)
                    if createdAt > w.now.subtracting(Self.idempotencyWindow), !r.isNull(0, 3) {
                        let first = try PostgresDeliveryRows.notification(r, 0, from: 3)
                        guard first.digest == notification.digest else { throw DeliveryError.idempotencyKeyReused }
                        return .existing(first)
                    }
                    try w.connection.query("DELETE FROM registry_idempotency_keys WHERE key = $1 AND notification_id = $2::uuid",
                                           [.text(try r.string(0, 0) ?? ""), .text(try r.string(0, 1) ?? "")])
                }
                try w.connection.query("INSERT INTO registry_idempotency_keys (key, notification_id, created_at) VALUES ($1, $2, $3)",
                                       [.text(key), .text(id), .int64(notification.createdAt.milliseconds)])
            }
            try writes.insert(notification, id: id)
            try writes.insert(deliveries, notificationId: id, priority: notification.priority)
            return .accepted(notification)
        }
    }

    public func notification(id: String) async throws -> NotificationRecord? {
        guard let id = PostgresDeliveryRows.uuid(id) else { return nil }
        return try await deliveryReading { connection in
            let r = try connection.query("SELECT \(PostgresDeliveryRows.notificationColumns) FROM registry_notifications WHERE id = $1",
                                         [.text(id)])
            return r.rowCount == 1 ? try PostgresDeliveryRows.notification(r, 0, from: 0) : nil
        }
    }

    public func deliveries(notificationId: String, from index: UInt32, limit: Int) async throws -> [DeliveryRecord] {
        guard let id = PostgresDeliveryRows.uuid(notificationId), limit > 0 else { return [] }
        return try await deliveryReading { connection in
            try PostgresDeliveryRows.deliveries(try connection.query("""
                SELECT \(PostgresDeliveryRows.deliveryColumns) FROM registry_deliveries
                WHERE notification_id = $1 AND idx >= $2 ORDER BY idx LIMIT $3
                """, [.text(id), .int64(Int64(index)), .int64(Int64(limit))]))
        }
    }

    /// Newest first over `registry_notifications_created`; a position is
    /// compared as a row value, so one page starts exactly after the last.
    public func recentNotifications(after position: NotificationPosition?, limit: Int) async throws -> [NotificationRecord] {
        guard limit > 0 else { return [] }
        var condition = ""
        var parameters: [PostgresValue?] = [.int64(Int64(limit))]
        if let position {
            guard let id = PostgresDeliveryRows.uuid(position.id) else { return [] }
            condition = "WHERE (created_at, id) < ($2, $3::uuid)"
            parameters += [.int64(position.createdAt.milliseconds), .text(id)]
        }
        return try await deliveryReading { [condition, parameters] connection in
            let r = try connection.query("""
                SELECT \(PostgresDeliveryRows.notificationColumns) FROM registry_notifications
                \(condition) ORDER BY created_at DESC, id DESC LIMIT $1
                """, parameters)
            return try (0..<r.rowCount).map { row in try PostgresDeliveryRows.notification(r, row, from: 0) }
        }
    }

    /// One statement: the queued deliveries become `cancelled` (rows a claim
    /// holds are waited for, then found `sending` and left), and the
    /// notification's counts move by how many did.
    public func cancel(notificationId: String) async throws -> NotificationRecord? {
        guard let id = PostgresDeliveryRows.uuid(notificationId) else { return nil }
        return try await deliveryWriting { w in
            let r = try w.connection.query("""
                WITH cancelled AS (
                    UPDATE registry_deliveries SET state = 'cancelled', updated_at = $2
                    WHERE notification_id = $1 AND state = 'queued' RETURNING 1
                )
                UPDATE registry_notifications SET count_queued = count_queued - (SELECT count(*) FROM cancelled),
                    count_cancelled = count_cancelled + (SELECT count(*) FROM cancelled),
                    cancelled_at = coalesce(cancelled_at, $2), expand_activity = NULL, expand_cursor = NULL
                WHERE id = $1
                RETURNING \(PostgresDeliveryRows.notificationColumns)
                """, [.text(id), .int64(w.now.milliseconds)])
            return r.rowCount == 1 ? try PostgresDeliveryRows.notification(r, 0, from: 0) : nil
        }
    }

    public func pendingExpansions(limit: Int) async throws -> [NotificationRecord] {
        guard limit > 0 else { return [] }
        return try await deliveryReading { connection in
            let r = try connection.query("""
                SELECT \(PostgresDeliveryRows.notificationColumns) FROM registry_notifications
                WHERE expand_cursor IS NOT NULL ORDER BY created_at LIMIT $1
                """, [.int64(Int64(limit))])
            return try (0..<r.rowCount).map { try PostgresDeliveryRows.notification(r, $0, from: 0) }
        }
    }

    /// The notification row locked first: two nodes expanding the same
    /// page take turns, and the second finds the cursor moved.
    public func expand(_ notificationId: String, from cursor: String, adding deliveries: [DeliveryRecord],
                       next: String?) async throws -> Bool {
        guard let id = PostgresDeliveryRows.uuid(notificationId) else { return false }
        return try await deliveryWriting { w in
            let r = try w.connection.query("""
                SELECT \(PostgresDeliveryRows.notificationColumns) FROM registry_notifications WHERE id = $1 FOR NO KEY UPDATE
                """, [.text(id)])
            guard r.rowCount == 1 else { return false }
            let notification = try PostgresDeliveryRows.notification(r, 0, from: 0)
            guard notification.expansion?.cursor == cursor, !notification.cancelled else { return false }
            let first = UInt32(notification.counts.total)
            var numbered = deliveries
            var counts = DeliveryCounts()
            for offset in numbered.indices {
                numbered[offset].index = first + UInt32(offset)
                counts.move(from: nil, to: numbered[offset].state)
            }
            let writes = PostgresDeliveryWrites(connection: w.connection)
            try writes.insert(numbered, notificationId: id, priority: notification.priority)
            try w.connection.query("""
                UPDATE registry_notifications SET expand_activity = CASE WHEN $2::text IS NULL THEN NULL ELSE expand_activity END,
                    expand_cursor = $2 WHERE id = $1
                """, [.text(id), next.map { .text($0) }])
            try writes.move([id: counts])
            return true
        }
    }

    /// Locks up to `limit` due `queued` rows, most urgent first (priority,
    /// then oldest due; `registry_deliveries_due` is in that order), skipping
    /// rows another node is claiming; reads each holder's token with the
    /// registry's own reads in the same transaction (`takeFromQueue`);
    /// writes the rows back (`sending`, `expired`, or `failed`) in one
    /// statement, then the notifications' counts.
    public func claimBatch(limit: Int) async throws -> ClaimBatch {
        guard limit > 0 else { return ClaimBatch(claimed: [], decided: []) }
        return try await deliveryWriting { w in
            let due = try PostgresDeliveryRows.deliveries(try w.connection.query("""
                SELECT \(PostgresDeliveryRows.deliveryColumns) FROM registry_deliveries
                WHERE state = 'queued' AND not_before <= $1
                ORDER BY priority DESC, not_before, notification_id, idx LIMIT $2
                FOR UPDATE SKIP LOCKED
                """, [.int64(w.now.milliseconds), .int64(Int64(limit))]))
            guard !due.isEmpty else { return ClaimBatch(claimed: [], decided: []) }
            let ids = Set(due.map(\.notificationId))
            let r = try w.connection.query("""
                SELECT \(PostgresDeliveryRows.notificationColumns) FROM registry_notifications WHERE id = ANY($1::uuid[])
                """, [PostgresDeliveryRows.textArray(ids.sorted())])
            var notifications: [String: NotificationRecord] = [:]
            for row in 0..<r.rowCount {
                let notification = try PostgresDeliveryRows.notification(r, row, from: 0)
                notifications[notification.id] = notification
            }
            var changed: [DeliveryRecord] = []
            var tokens: [String?] = []
            var moves: [String: DeliveryCounts] = [:]
            for var delivery in due {
                guard let notification = notifications[delivery.notificationId] else { continue }
                let token = try delivery.takeFromQueue(notification, in: w, now: w.now)
                moves[delivery.notificationId, default: DeliveryCounts()].move(from: .queued, to: delivery.state)
                changed.append(delivery)
                tokens.append(token?.token)
            }
            let writes = PostgresDeliveryWrites(connection: w.connection)
            try writes.save(changed)
            let after = try writes.move(moves)
            var batch = ClaimBatch(claimed: [], decided: [])
            for (delivery, token) in zip(changed, tokens) {
                if let token {
                    guard let notification = after[delivery.notificationId] else { continue }
                    batch.claimed.append(ClaimedDelivery(delivery: delivery, token: token, notification: notification))
                } else {
                    batch.decided.append(delivery)
                }
            }
            return batch
        }
    }

    /// Reads the settled rows that are still `sending` (locking them), applies
    /// the settlements in order as LMDB does, and writes back what changed.
    public func settle(_ settlements: [DeliverySettlement]) async throws {
        let keys = settlements.compactMap { s in
            PostgresDeliveryRows.uuid(s.notificationId).flatMap { id in s.index <= UInt32(Int32.max) ? (id, s) : nil }
        }
        guard !keys.isEmpty else { return }
        try await deliveryWriting { w in
            let r = try w.connection.query("""
                SELECT \(PostgresDeliveryRows.deliveryColumns) FROM registry_deliveries
                WHERE (notification_id, idx) IN (SELECT * FROM unnest($1::uuid[], $2::integer[])) AND state = 'sending'
                ORDER BY notification_id, idx FOR UPDATE
                """, [PostgresDeliveryRows.textArray(keys.map(\.0)), PostgresDeliveryRows.integerArray(keys.map { Int64($0.1.index) })])
            var sending: [DeliveryKey: DeliveryRecord] = [:]
            for delivery in try PostgresDeliveryRows.deliveries(r) {
                sending[DeliveryKey(id: delivery.notificationId, index: delivery.index)] = delivery
            }
            // A cancel committed since the claim turns a retry into `cancelled`;
            // one that commits after this read is caught by the next claim.
            let ids: [String] = Set(sending.values.map(\.notificationId)).sorted()
            let flags = try w.connection.query("""
                SELECT id::text FROM registry_notifications WHERE id = ANY($1::uuid[]) AND cancelled_at IS NOT NULL
                """, [PostgresDeliveryRows.textArray(ids)])
            let cancelled = Set(try (0..<flags.rowCount).map { try flags.string($0, 0) ?? "" })
            var changed: [DeliveryKey: DeliveryRecord] = [:]
            var moves: [String: DeliveryCounts] = [:]
            for (id, settlement) in keys {
                let key = DeliveryKey(id: id, index: settlement.index)
                guard var delivery = changed[key] ?? sending[key], delivery.state == .sending else { continue }
                delivery.settle(settlement, cancelled: cancelled.contains(id), now: w.now)
                moves[id, default: DeliveryCounts()].move(from: .sending, to: delivery.state)
                changed[key] = delivery
            }
            let writes = PostgresDeliveryWrites(connection: w.connection)
            try writes.save(Array(changed.values))
            try writes.move(moves)
        }
    }

    /// Skips claims being settled right now (their settlement wins).
    public func abandonClaims(claimedBefore cutoff: Timestamp) async throws -> Int {
        try await deliveryWriting { w in
            var stale = try PostgresDeliveryRows.deliveries(try w.connection.query("""
                SELECT \(PostgresDeliveryRows.deliveryColumns) FROM registry_deliveries
                WHERE state = 'sending' AND claimed_at < $1
                ORDER BY claimed_at LIMIT $2 FOR UPDATE SKIP LOCKED
                """, [.int64(cutoff.milliseconds), .int64(Int64(Self.abandonBatch))]))
            var moves: [String: DeliveryCounts] = [:]
            for index in stale.indices {
                stale[index].abandon(now: w.now)
                moves[stale[index].notificationId, default: DeliveryCounts()].move(from: .sending, to: .unknown)
            }
            let writes = PostgresDeliveryWrites(connection: w.connection)
            try writes.save(stale)
            try writes.move(moves)
            return stale.count
        }
    }

    /// One statement: the oldest finished notifications created before
    /// `cutoff` (at most `notificationSweepBatch`), their deliveries, and
    /// their idempotency keys where the key still names them. Unfinished
    /// ones are passed over, not counted, and do not hold back finished
    /// ones behind them. A notification's counts say it is finished; no
    /// delivery of it can change after that (only `queued` and `sending`
    /// ones move).
    public func sweepNotifications(createdBefore cutoff: Timestamp) async throws -> Int {
        try await deliveryWriting { w in
            let r = try w.connection.query("""
                WITH gone AS (
                    DELETE FROM registry_notifications WHERE id IN (
                        SELECT id FROM registry_notifications
                        WHERE created_at < $1 AND count_queued = 0 AND count_sending = 0 AND expand_cursor IS NULL
                        ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
                    RETURNING id, app_id, idempotency_key
                ), items AS (
                    DELETE FROM registry_deliveries WHERE notification_id IN (SELECT id FROM gone)
                ), keys AS (
                    DELETE FROM registry_idempotency_keys k USING gone
                    WHERE k.key IN (gone.app_id || chr(31) || gone.idempotency_key, gone.idempotency_key)
                        AND k.notification_id = gone.id
                )
                SELECT count(*) FROM gone
                """, [.int64(cutoff.milliseconds), .int64(Int64(Self.notificationSweepBatch))])
            return Int(try r.int64(0, 0) ?? 0)
        }
    }

    /// The notifications' own counts, summed over those not finished
    /// (`registry_notifications_unfinished`, a partial index, holds only
    /// them): exact, and cheap beside counting millions of delivery rows.
    public func pendingDeliveries() async throws -> Int {
        try await deliveryReading { connection in
            let r = try connection.query("""
                SELECT coalesce(sum(count_queued + count_sending), 0) FROM registry_notifications
                WHERE count_queued > 0 OR count_sending > 0
                """)
            return Int(try r.int64(0, 0) ?? 0)
        }
    }

    /// Each figure from its partial index (one statement, one snapshot).
    public func queueStats() async throws -> DeliveryQueueStats {
        try await deliveryReading { connection in
            let r = try connection.query("""
                SELECT (SELECT count(*) FROM registry_deliveries WHERE state = 'queued'),
                       (SELECT count(*) FROM registry_deliveries WHERE state = 'sending'),
                       (SELECT min(not_before) FROM registry_deliveries WHERE state = 'queued')
                """)
            return DeliveryQueueStats(queued: Int(try r.int64(0, 0) ?? 0), sending: Int(try r.int64(0, 1) ?? 0),
                                      oldestDue: try r.int64(0, 2).map { Timestamp(milliseconds: $0) })
        }
    }
}

/// A delivery's key (its notification's id, its index), for settlements.
private struct DeliveryKey: Hashable {
    let id: String
    let index: UInt32
}
