import RegistryCore

/// Stored encodings of the delivery queue (`ByteWriter`/`ByteReader`).
/// Version 2 added a notification's FCM body (and made its APNs payload
/// optional) and a delivery's message id; version 3 a notification's
/// cancelled flag and the expansion of its activity target, and a
/// delivery's `apns-unique-id`. Older values are read as they are (no payload flag, no
/// FCM body, no message id, not cancelled), so an existing data directory
/// needs no migration step.
extension NotificationRecord {
    func encoded() -> [UInt8] {
        var w = ByteWriter(version: 3)
        w.timestamp(createdAt)
        w.string(appId)
        w.byte(UInt8(PushType.allCases.firstIndex(of: pushType)!))
        w.optionalBlob(payload)
        w.optionalBlob(fcm)
        w.varint(UInt64(priority))
        w.timestamp(expiration)
        w.optional(collapseId)
        w.optional(idempotencyKey)
        w.blob(digest)
        for count in counts.values { w.varint(UInt64(count)) }
        w.byte(cancelled ? 1 : 0)
        w.optional(expansion?.activityId)
        if let expansion { w.string(expansion.cursor) }
        return w.bytes
    }

    init(id: String, decoding bytes: [UInt8]) throws(StoredValueError) {
        var r = try ByteReader(bytes, what: "notification", versions: 1...3)
        let createdAt = try r.timestamp()
        let appId = try r.string()
        let pushType = try r.enumValue(PushType.self, PushType.allCases)
        let payload: [UInt8]?
        var fcm: [UInt8]?
        if r.version == 1 {
            payload = Array(try r.blob())
        } else {
            payload = try r.optionalBlob()
            fcm = try r.optionalBlob()
        }
        let priority = Int(try r.varint())
        let expiration = try r.timestamp()
        let collapseId = try r.optionalString()
        let idempotencyKey = try r.optionalString()
        let digest = Array(try r.blob())
        var counts = DeliveryCounts()
        for state in DeliveryState.allCases { counts[state] = Int(try r.varint()) }
        var cancelled = false
        var expansion: NotificationExpansion?
        if r.version >= 3 {
            cancelled = try r.byte() == 1
            if let activity = try r.optionalString() { expansion = NotificationExpansion(activityId: activity, cursor: try r.string()) }
        }
        try r.finish()
        self.init(id: id, createdAt: createdAt, appId: appId, pushType: pushType, payload: payload, fcm: fcm, priority: priority,
                  expiration: expiration, collapseId: collapseId, idempotencyKey: idempotencyKey, digest: digest, counts: counts,
                  cancelled: cancelled, expansion: expansion)
    }
}

extension DeliveryRecord {
    func encoded() -> [UInt8] {
        var w = ByteWriter(version: 3)
        w.string(target.userId)
        w.string(target.appId)
        w.string(target.deviceId)
        w.byte(UInt8(DeliveryTarget.Kind.allCases.firstIndex(of: target.kind)!))
        w.optional(target.activityId)
        w.string(tokenFingerprint)
        w.byte(UInt8(Platform.allCases.firstIndex(of: platform)!))
        w.byte(UInt8(APNsEnvironment.allCases.firstIndex(of: environment)!))
        w.byte(state.code)
        w.string(apnsId)
        w.varint(UInt64(status ?? 0))
        w.optional(reason)
        w.varint(UInt64(attempts))
        w.varint(UInt64(retries))
        w.timestamp(updatedAt)
        w.timestamp(notBefore)
        w.byte(claimedAt == nil ? 0 : 1)
        if let claimedAt { w.timestamp(claimedAt) }
        w.optional(messageId)
        w.optional(apnsUniqueId)
        return w.bytes
    }

    init(notificationId: String, index: UInt32, decoding bytes: [UInt8]) throws(StoredValueError) {
        var r = try ByteReader(bytes, what: "delivery", versions: 1...3)
        let target = DeliveryTarget(userId: try r.string(), appId: try r.string(), deviceId: try r.string(),
                                    kind: try r.enumValue(DeliveryTarget.Kind.self, DeliveryTarget.Kind.allCases),
                                    activityId: try r.optionalString())
        let fingerprint = try r.string()
        let platform = try r.enumValue(Platform.self, Platform.allCases)
        let environment = try r.enumValue(APNsEnvironment.self, APNsEnvironment.allCases)
        guard let state = DeliveryState(code: try r.byte()) else { throw StoredValueError(what: "delivery", reason: "bad state") }
        let apnsId = try r.string()
        let status = Int(try r.varint())
        let reason = try r.optionalString()
        let attempts = Int(try r.varint())
        let retries = Int(try r.varint())
        let updatedAt = try r.timestamp()
        let notBefore = try r.timestamp()
        let claimedAt = try r.byte() == 0 ? nil : try r.timestamp()
        let messageId = r.version == 1 ? nil : try r.optionalString()
        let apnsUniqueId = r.version < 3 ? nil : try r.optionalString()
        try r.finish()
        self.init(notificationId: notificationId, index: index, target: target, tokenFingerprint: fingerprint,
                  platform: platform, environment: environment, state: state, apnsId: apnsId, messageId: messageId,
                  apnsUniqueId: apnsUniqueId,
                  status: status == 0 ? nil : status, reason: reason, attempts: attempts, retries: retries,
                  updatedAt: updatedAt, notBefore: notBefore, claimedAt: claimedAt)
    }
}

extension ByteWriter {
    /// A flag byte, then the string when present.
    mutating func optional(_ s: String?) {
        byte(s == nil ? 0 : 1)
        if let s { string(s) }
    }

    /// A flag byte, then the bytes when present.
    mutating func optionalBlob(_ b: [UInt8]?) {
        byte(b == nil ? 0 : 1)
        if let b { blob(b) }
    }
}

extension ByteReader {
    mutating func optionalString() throws(StoredValueError) -> String? {
        try byte() == 0 ? nil : try string()
    }

    mutating func optionalBlob() throws(StoredValueError) -> [UInt8]? {
        try byte() == 0 ? nil : Array(try blob())
    }
}
