import RegistryCore
import Postgres

/// The delivery queue's statements inside one transaction: many rows per
/// statement (arrays through `unnest`), so a fan-out of thousands costs a
/// few round trips, not one per delivery.
struct PostgresDeliveryWrites {
    let connection: PostgresConnection

    /// Deliveries per INSERT: a 100,000-token notification is 20 statements
    /// of about a megabyte of parameters each.
    static let insertBatch = 5_000

    func insert(_ notification: NotificationRecord, id: String) throws {
        let parameters = PostgresDeliveryRows.notificationParameters(notification, id: id)
        try connection.query("""
            INSERT INTO registry_notifications (id, created_at, app_id, push_type, payload, priority, expiration,
                collapse_id, idempotency_key, digest, \(PostgresDeliveryRows.countColumnNames.joined(separator: ", ")), fcm,
                expand_activity, expand_cursor)
            VALUES (\((1...parameters.count).map { "$\($0)" }.joined(separator: ", ")))
            """, parameters)
    }

    /// Inserts `deliveries` under `notificationId` (whatever theirs says),
    /// with the notification's `priority` (their claim order), in batches.
    func insert(_ deliveries: [DeliveryRecord], notificationId: String, priority: Int) throws {
        var start = 0
        while start < deliveries.count {
            let batch = deliveries[start..<min(start + Self.insertBatch, deliveries.count)]
            try connection.query("""
                INSERT INTO registry_deliveries (notification_id, idx, user_id, app_id, device_id, kind, activity_id,
                    token_fingerprint, platform, environment, state, apns_id, status, reason, attempts, retries,
                    updated_at, not_before, claimed_at, message_id, priority)
                SELECT $1::uuid, *, $21::smallint FROM unnest($2::integer[], $3::text[], $4::text[], $5::text[], $6::text[],
                    $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::integer[], $14::text[],
                    $15::integer[], $16::integer[], $17::bigint[], $18::bigint[], $19::bigint[], $20::text[])
                """, [.text(notificationId), Self.integers(batch) { Int64($0.index) },
                      Self.texts(batch) { $0.target.userId }, Self.texts(batch) { $0.target.appId },
                      Self.texts(batch) { $0.target.deviceId }, Self.texts(batch) { $0.target.kind.rawValue },
                      Self.texts(batch) { $0.target.activityId }, Self.texts(batch) { $0.tokenFingerprint },
                      Self.texts(batch) { $0.platform.rawValue }, Self.texts(batch) { $0.environment.rawValue },
                      Self.texts(batch) { $0.state.rawValue }, Self.texts(batch) { $0.apnsId },
                      Self.integers(batch) { $0.status.map(Int64.init) }, Self.texts(batch) { $0.reason },
                      Self.integers(batch) { Int64($0.attempts) }, Self.integers(batch) { Int64($0.retries) },
                      Self.integers(batch) { $0.updatedAt.milliseconds }, Self.integers(batch) { $0.notBefore.milliseconds },
                      Self.integers(batch) { $0.claimedAt?.milliseconds }, Self.texts(batch) { $0.messageId },
                      .int64(Int64(priority))])
            start += batch.count
        }
    }

    /// Writes what a transition (`claim`, `settle`, `abandon`) changes of
    /// deliveries read in this transaction, in one statement.
    func save(_ deliveries: [DeliveryRecord]) throws {
        guard !deliveries.isEmpty else { return }
        try connection.query("""
            UPDATE registry_deliveries d SET state = u.state, environment = u.environment,
                token_fingerprint = u.token_fingerprint, status = u.status, reason = u.reason, attempts = u.attempts,
                retries = u.retries, updated_at = u.updated_at, not_before = u.not_before, claimed_at = u.claimed_at,
                message_id = u.message_id, apns_unique_id = u.apns_unique_id
            FROM unnest($1::uuid[], $2::integer[], $3::text[], $4::text[], $5::text[], $6::integer[], $7::text[],
                        $8::integer[], $9::integer[], $10::bigint[], $11::bigint[], $12::bigint[], $13::text[], $14::text[])
                AS u(notification_id, idx, state, environment, token_fingerprint, status, reason, attempts, retries,
                     updated_at, not_before, claimed_at, message_id, apns_unique_id)
            WHERE d.notification_id = u.notification_id AND d.idx = u.idx
            """, [Self.texts(deliveries) { $0.notificationId }, Self.integers(deliveries) { Int64($0.index) },
                  Self.texts(deliveries) { $0.state.rawValue }, Self.texts(deliveries) { $0.environment.rawValue },
                  Self.texts(deliveries) { $0.tokenFingerprint }, Self.integers(deliveries) { $0.status.map(Int64.init) },
                  Self.texts(deliveries) { $0.reason }, Self.integers(deliveries) { Int64($0.attempts) },
                  Self.integers(deliveries) { Int64($0.retries) }, Self.integers(deliveries) { $0.updatedAt.milliseconds },
                  Self.integers(deliveries) { $0.notBefore.milliseconds }, Self.integers(deliveries) { $0.claimedAt?.milliseconds },
                  Self.texts(deliveries) { $0.messageId }, Self.texts(deliveries) { $0.apnsUniqueId }])
    }

    /// Adds `changes` (per notification id, how many deliveries each state
    /// gained or lost) to the notifications' counts; returns the
    /// notifications as they are after it, by id.
    ///
    /// SQL arithmetic on the row as it is when this transaction locks it
    /// (READ COMMITTED re-reads a row another transaction changed), so
    /// nodes moving deliveries of one notification at once lose no change.
    /// The rows are locked in id order (the `FOR NO KEY UPDATE` sub-select),
    /// so two transactions touching the same notifications cannot deadlock.
    /// Every caller makes this its last statement: a hot notification's row
    /// stays locked from here to COMMIT only.
    @discardableResult
    func move(_ changes: [String: DeliveryCounts]) throws -> [String: NotificationRecord] {
        guard !changes.isEmpty else { return [:] }
        let ids = changes.keys.sorted()
        let names = PostgresDeliveryRows.countColumnNames
        let arrays = names.indices.map { "$\($0 + 2)::integer[]" }.joined(separator: ", ")
        let r = try connection.query("""
            UPDATE registry_notifications n SET \(names.map { "\($0) = n.\($0) + c.\($0)" }.joined(separator: ", "))
            FROM unnest($1::uuid[], \(arrays)) AS c(id, \(names.joined(separator: ", ")))
            WHERE n.id = c.id AND n.id IN (SELECT id FROM registry_notifications WHERE id = ANY($1::uuid[])
                                           ORDER BY id FOR NO KEY UPDATE)
            RETURNING \(PostgresDeliveryRows.notificationColumns(of: "n"))
            """, [PostgresDeliveryRows.textArray(ids)]
                + DeliveryState.allCases.map { state in PostgresDeliveryRows.integerArray(ids.map { Int64(changes[$0]![state]) }) })
        var found: [String: NotificationRecord] = [:]
        for row in 0..<r.rowCount {
            let notification = try PostgresDeliveryRows.notification(r, row, from: 0)
            found[notification.id] = notification
        }
        return found
    }

    private static func texts(_ deliveries: some Collection<DeliveryRecord>, _ value: (DeliveryRecord) -> String?) -> PostgresValue {
        PostgresDeliveryRows.textArray(deliveries.lazy.map(value))
    }

    private static func integers(_ deliveries: some Collection<DeliveryRecord>, _ value: (DeliveryRecord) -> Int64?) -> PostgresValue {
        PostgresDeliveryRows.integerArray(deliveries.lazy.map(value))
    }
}
