import Foundation
import RegistryCore
import Postgres

/// How the delivery queue's rows (migrations 3 to 5) become records and back:
/// the column lists, their decoding, and the array parameters that carry
/// many rows in one statement.
enum PostgresDeliveryRows {
    /// The lowercase UUID text a notification id is stored and shown as;
    /// `nil` for anything that is not a UUID (it names no notification).
    static func uuid(_ id: String) -> String? { UUID(uuidString: id).map { $0.uuidString.lowercased() } }

    /// One count column per state, in `DeliveryState.allCases` order.
    static let countColumnNames = DeliveryState.allCases.map { "count_" + $0.rawValue }

    /// The notification columns, in the order `notification` reads them.
    static let notificationColumns = (["id::text", "created_at", "app_id", "push_type", "payload", "priority", "expiration",
                                       "collapse_id", "idempotency_key", "digest"] + countColumnNames + ["fcm", "cancelled_at",
                                                                                    "expand_activity", "expand_cursor"])
        .joined(separator: ", ")

    /// `notificationColumns` of a table alias.
    static func notificationColumns(of alias: String) -> String {
        notificationColumns.split(separator: ", ").map { alias + "." + $0 }.joined(separator: ", ")
    }

    static func notification(_ r: PostgresResult, _ row: Int, from column: Int) throws -> NotificationRecord {
        guard let pushType = PushType(rawValue: try r.string(row, column + 3) ?? "") else {
            throw StoredValueError(what: "notification row", reason: "unknown push type")
        }
        var counts = DeliveryCounts()
        for (offset, state) in DeliveryState.allCases.enumerated() {
            counts[state] = Int(try r.int64(row, column + 10 + offset) ?? 0)
        }
        return NotificationRecord(
            id: try r.string(row, column) ?? "", createdAt: try timestamp(r, row, column + 1),
            appId: try r.string(row, column + 2) ?? "", pushType: pushType, payload: try r.bytes(row, column + 4),
            fcm: try r.bytes(row, column + 10 + DeliveryState.allCases.count), priority: Int(try r.int64(row, column + 5) ?? 0), expiration: try timestamp(r, row, column + 6),
            collapseId: try r.string(row, column + 7), idempotencyKey: try r.string(row, column + 8),
            digest: try r.bytes(row, column + 9) ?? [], counts: counts,
            cancelled: !r.isNull(row, column + 11 + DeliveryState.allCases.count),
            expansion: try expansion(r, row, column + 12 + DeliveryState.allCases.count))
    }

    private static func expansion(_ r: PostgresResult, _ row: Int, _ column: Int) throws -> NotificationExpansion? {
        guard let activity = try r.string(row, column), let cursor = try r.string(row, column + 1) else { return nil }
        return NotificationExpansion(activityId: activity, cursor: cursor)
    }

    /// The parameters of `INSERT INTO registry_notifications` (`PostgresDeliveryWrites.insert`).
    static func notificationParameters(_ n: NotificationRecord, id: String) -> [PostgresValue?] {
        [.text(id), .int64(n.createdAt.milliseconds), .text(n.appId), .text(n.pushType.rawValue), n.payload.map { .bytea($0) },
         .int64(Int64(n.priority)), .int64(n.expiration.milliseconds), n.collapseId.map { .text($0) },
         n.idempotencyKey.map { .text($0) }, .bytea(n.digest)]
            + DeliveryState.allCases.map { .int64(Int64(n.counts[$0])) } + [n.fcm.map { .bytea($0) }]
            + [n.expansion.map { .text($0.activityId) }, n.expansion.map { .text($0.cursor) }]
    }

    /// The delivery columns, in the order `delivery` reads them.
    static let deliveryColumns = """
        notification_id::text, idx, user_id, app_id, device_id, kind, activity_id, token_fingerprint, platform, \
        environment, state, apns_id, status, reason, attempts, retries, updated_at, not_before, claimed_at, message_id, \
        apns_unique_id
        """

    static func delivery(_ r: PostgresResult, _ row: Int) throws -> DeliveryRecord {
        guard let kind = DeliveryTarget.Kind(rawValue: try r.string(row, 5) ?? ""),
              let platform = Platform(rawValue: try r.string(row, 8) ?? ""),
              let environment = APNsEnvironment(rawValue: try r.string(row, 9) ?? ""),
              let state = DeliveryState(rawValue: try r.string(row, 10) ?? "") else {
            throw StoredValueError(what: "delivery row", reason: "unknown kind, platform, environment or state")
        }
        let target = DeliveryTarget(userId: try r.string(row, 2) ?? "", appId: try r.string(row, 3) ?? "",
                                    deviceId: try r.string(row, 4) ?? "", kind: kind, activityId: try r.string(row, 6))
        return DeliveryRecord(
            notificationId: try r.string(row, 0) ?? "", index: UInt32(clamping: try r.int64(row, 1) ?? 0), target: target,
            tokenFingerprint: try r.string(row, 7) ?? "", platform: platform, environment: environment, state: state,
            apnsId: try r.string(row, 11) ?? "", messageId: try r.string(row, 19),
            apnsUniqueId: try r.string(row, 20), status: try r.int64(row, 12).map { Int($0) },
            reason: try r.string(row, 13), attempts: Int(try r.int64(row, 14) ?? 0), retries: Int(try r.int64(row, 15) ?? 0),
            updatedAt: try timestamp(r, row, 16), notBefore: try timestamp(r, row, 17),
            claimedAt: r.isNull(row, 18) ? nil : try timestamp(r, row, 18))
    }

    static func deliveries(_ r: PostgresResult) throws -> [DeliveryRecord] {
        try (0..<r.rowCount).map { try delivery(r, $0) }
    }

    private static func timestamp(_ r: PostgresResult, _ row: Int, _ column: Int) throws -> Timestamp {
        Timestamp(milliseconds: try r.int64(row, column) ?? 0)
    }

    // MARK: Arrays

    /// A `text[]` (or `uuid[]`) parameter; `nil` elements are NULL. Built
    /// as UTF-8 bytes: a 10,000-delivery enqueue builds thirteen of these.
    static func textArray(_ values: some Sequence<String?>) -> PostgresValue {
        var literal: [UInt8] = [UInt8(ascii: "{")]
        for (index, value) in values.enumerated() {
            if index > 0 { literal.append(UInt8(ascii: ",")) }
            guard let value else {
                literal += "NULL".utf8
                continue
            }
            literal.append(UInt8(ascii: "\""))
            for byte in value.utf8 {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { literal.append(UInt8(ascii: "\\")) }
                literal.append(byte)
            }
            literal.append(UInt8(ascii: "\""))
        }
        literal.append(UInt8(ascii: "}"))
        return .text(String(decoding: literal, as: UTF8.self))
    }

    /// An `integer[]` or `bigint[]` parameter; `nil` elements are NULL.
    static func integerArray(_ values: some Sequence<Int64?>) -> PostgresValue {
        .text("{" + values.map { $0.map(String.init) ?? "NULL" }.joined(separator: ",") + "}")
    }
}
