import Foundation
import HTTPServer
import JSON
import RegistryCore

/// `/internal/v1/notifications` (docs/api.md "Delivery"): accept, list,
/// show, cancel, and the queue's shape. Answers never carry a token (a
/// delivery shows its fingerprint).
extension RegistryApplication {
    func acceptNotification(_ call: Call) async throws -> HTTPResponse {
        guard let delivery else { throw APIError.deliveryNotConfigured }
        let request = try NotificationBody.parse(call.request.body, capabilities: delivery.capabilities)
        let outcome: EnqueueOutcome
        do {
            outcome = try await delivery.intake.accept(request)
        } catch DeliveryError.idempotencyKeyReused {
            throw APIError.idempotencyKeyReused
        }
        switch outcome {
        case .accepted(let notification):
            delivery.accepted()
            metrics.delivery.recordAccepted(deliveries: notification.counts.total)
            return Self.json(202, capacity: 512) { w in Self.notificationDocument(notification, into: &w) }
        case .existing(let notification):
            return Self.json(200, capacity: 512) { w in Self.notificationDocument(notification, into: &w) }
        }
    }

    func showNotification(_ call: Call) async throws -> HTTPResponse {
        guard let delivery else { throw APIError.deliveryNotConfigured }
        let id = try call.parameter(FieldCheck.notificationId)
        let parameters = try QueryParameters(call.request.query)
        let limit = try FieldCheck.limit(in: parameters, standard: configuration.defaultPageLimit, max: configuration.maxPageLimit)
        var from: UInt32 = 0
        if let cursor = try parameters.single("cursor") {
            guard let index = UInt64(decimalDigits: cursor).flatMap(UInt32.init(exactly:)) else { throw APIError.invalidField("cursor", "is not a cursor this route made") }
            from = index
        }
        guard let notification = try await delivery.store.notification(id: id) else { throw APIError.notificationNotFound }
        let page = try await delivery.store.deliveries(notificationId: id, from: from, limit: limit + 1)
        let shown = page.prefix(limit)
        let next = page.count > limit ? String(page[limit].index) : nil
        return Self.json(200, capacity: 512 + shown.count * 400) { w in
            w.beginObject()
            w.key("notification")
            Self.notificationView(notification, into: &w)
            w.key("deliveries")
            w.beginArray()
            for record in shown { Self.deliveryView(record, into: &w) }
            w.endArray()
            w.member("nextCursor", next)
            w.endObject()
        }
    }

    /// `GET /internal/v1/notifications`: the newest first, `limit` (1–100,
    /// default 20) a page, `cursor` the `nextCursor` of the page before.
    func listNotifications(_ call: Call) async throws -> HTTPResponse {
        guard let delivery else { throw APIError.deliveryNotConfigured }
        let parameters = try QueryParameters(call.request.query)
        let limit = try FieldCheck.limit(in: parameters, standard: 20, max: 100)
        let after = try parameters.single("cursor").map(NotificationCursor.decode)
        let page = try await delivery.store.recentNotifications(after: after, limit: limit + 1)
        let shown = page.prefix(limit)
        let last = page.count > limit ? shown.last : nil
        let next = last.map { NotificationCursor.encode(NotificationPosition(createdAt: $0.createdAt, id: $0.id)) }
        return Self.json(200, capacity: 64 + shown.count * 320) { w in
            w.beginObject()
            w.key("notifications")
            w.beginArray()
            for notification in shown { Self.notificationView(notification, into: &w) }
            w.endArray()
            w.member("nextCursor", next)
            w.endObject()
        }
    }

    /// `GET /internal/v1/deliveries/queue`: is the queue draining? What
    /// waits, what is in flight, and how long the oldest due one has waited
    /// (whole seconds, 0 when none is due).
    func deliveryQueue(_ call: Call) async throws -> HTTPResponse {
        guard let delivery else { throw APIError.deliveryNotConfigured }
        let stats = try await delivery.store.queueStats()
        let waited = stats.oldestDue.map { max(0, now.milliseconds - $0.milliseconds) / 1000 } ?? 0
        return Self.json(200, capacity: 128) { w in
            w.beginObject()
            w.member("queued", Int64(stats.queued))
            w.member("sending", Int64(stats.sending))
            w.member("oldestDueAt", stats.oldestDue)
            w.member("oldestWaitSeconds", waited)
            w.endObject()
        }
    }

    func cancelNotification(_ call: Call) async throws -> HTTPResponse {
        guard let delivery else { throw APIError.deliveryNotConfigured }
        let id = try call.parameter(FieldCheck.notificationId)
        guard let notification = try await delivery.store.cancel(notificationId: id) else { throw APIError.notificationNotFound }
        return Self.json(200, capacity: 512) { w in Self.notificationDocument(notification, into: &w) }
    }

    static func notificationDocument(_ notification: NotificationRecord, into w: inout JSONWriter) {
        w.beginObject()
        w.key("notification")
        notificationView(notification, into: &w)
        w.endObject()
    }

    static func notificationView(_ n: NotificationRecord, into w: inout JSONWriter) {
        w.beginObject()
        w.member("id", n.id)
        w.member("createdAt", n.createdAt)
        w.member("appId", n.appId)
        w.member("pushType", n.pushType.rawValue)
        // An activity's tokens are still being read, page by page: the counts will grow.
        w.member("resolving", n.expansion != nil)
        w.key("counts")
        w.beginObject()
        for state in DeliveryState.allCases {
            w.key(state.rawValue)
            w.int(Int64(n.counts[state]))
        }
        w.endObject()
        w.endObject()
    }

    static func deliveryView(_ d: DeliveryRecord, into w: inout JSONWriter) {
        w.beginObject()
        w.member("userId", d.target.userId)
        w.member("deviceId", d.target.deviceId)
        w.member("appId", d.target.appId)
        w.member("kind", d.target.kind.rawValue)
        w.member("activityId", d.target.activityId)
        w.member("tokenFingerprint", d.tokenFingerprint)
        w.member("environment", d.environment.rawValue)
        w.member("state", d.state.rawValue)
        w.member("platform", d.platform.rawValue)
        w.member("apnsId", d.platform == .apns ? d.apnsId : nil)
        w.member("messageId", d.messageId ?? (d.platform == .apns && d.state == .delivered ? d.apnsId : nil))
        if let uniqueId = d.apnsUniqueId { w.member("apnsUniqueId", uniqueId) }
        w.member("status", d.status.map { UInt64($0) })
        w.member("reason", d.reason)
        w.member("attempts", Int64(d.attempts))
        w.member("updatedAt", d.updatedAt)
        w.endObject()
    }
}

/// `nextCursor` of the notification list: the last notification shown, as
/// `<createdAt in epoch ms>_<id>`. Opaque to callers (the format may
/// change); one this route did not make is a 400 naming `cursor`.
enum NotificationCursor {
    static func encode(_ position: NotificationPosition) -> String {
        "\(position.createdAt.milliseconds)_\(position.id)"
    }

    static func decode(_ text: String) throws(APIError) -> NotificationPosition {
        let parts = text.split(separator: "_", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let ms = UInt64(decimalDigits: String(parts[0])), ms <= UInt64(Int64.max),
              let uuid = UUID(uuidString: String(parts[1])) else {
            throw .invalidField("cursor", "is not a cursor this route made")
        }
        return NotificationPosition(createdAt: Timestamp(milliseconds: Int64(ms)), id: uuid.uuidString.lowercased())
    }
}

extension FieldCheck {
    /// A notification id as `POST` made it (a UUID); anything else names no notification.
    static func notificationId(_ value: String, field: String) throws(APIError) -> String {
        guard let uuid = UUID(uuidString: value) else { throw APIError.notificationNotFound }
        return uuid.uuidString.lowercased()
    }
}
