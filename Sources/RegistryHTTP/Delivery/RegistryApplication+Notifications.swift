import Foundation
import HTTPServer
import JSON
import RegistryCore

/// `/internal/v1/notifications` (docs/api.md "Delivery"): accept, show,
/// cancel. Answers never carry a token (a delivery shows its fingerprint).
extension RegistryApplication {
    func acceptNotification(_ call: Call) async throws -> HTTPResponse {
        guard let delivery else { throw APIError.deliveryNotConfigured }
        let request = try NotificationBody.parse(call.request.body, topics: delivery.topics)
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
        w.member("apnsId", d.apnsId)
        w.member("status", d.status.map { UInt64($0) })
        w.member("reason", d.reason)
        w.member("attempts", Int64(d.attempts))
        w.member("updatedAt", d.updatedAt)
        w.endObject()
    }
}

extension FieldCheck {
    /// A notification id as `POST` made it (a UUID); anything else names no notification.
    static func notificationId(_ value: String, field: String) throws(APIError) -> String {
        guard let uuid = UUID(uuidString: value) else { throw APIError.notificationNotFound }
        return uuid.uuidString.lowercased()
    }
}
