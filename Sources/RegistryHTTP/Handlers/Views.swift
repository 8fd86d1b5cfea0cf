import JSON
import RegistryCore

/// The three ways a device is shown, a fan-out entry and a history event,
/// written straight into the response (no intermediate values: these are
/// the hot paths of every read). The device view (device API) never carries
/// a token; the sender view (internal API) adds them; the operator view
/// (the console's) adds their fingerprints instead, so a browser never
/// holds a token. Every view names its record's `appId` (docs/api.md "App
/// families"; `default` for a v1 client), right after `deviceId`.
enum Views {
    static func device(_ d: DeviceRecord, into w: inout JSONWriter) {
        w.beginObject()
        deviceMembers(d, into: &w)
        w.endObject()
    }

    static func sender(_ d: DeviceRecord, into w: inout JSONWriter) {
        w.beginObject()
        w.member("userId", d.userId)
        deviceMembers(d, into: &w)
        w.member("pushToken", d.pushToken?.token)
        w.member("pushToStartToken", d.pushToStartToken?.token)
        w.member("pushToStartEnvironment", d.pushToStartToken?.environment.rawValue)
        w.member("tokenUpdatedAt", d.pushToken?.updatedAt)
        w.member("pushToStartTokenUpdatedAt", d.pushToStartToken?.updatedAt)
        w.endObject()
    }

    /// The sender view with each token replaced by its fingerprint (the
    /// one history events carry, so the two can be matched).
    static func operatorView(_ d: DeviceRecord, into w: inout JSONWriter) {
        w.beginObject()
        w.member("userId", d.userId)
        deviceMembers(d, into: &w)
        w.member("pushTokenFingerprint", d.pushToken.map { HistoryEvent.fingerprint(of: $0.token) })
        w.member("pushToStartTokenFingerprint", d.pushToStartToken.map { HistoryEvent.fingerprint(of: $0.token) })
        w.member("pushToStartEnvironment", d.pushToStartToken?.environment.rawValue)
        w.member("tokenUpdatedAt", d.pushToken?.updatedAt)
        w.member("pushToStartTokenUpdatedAt", d.pushToStartToken?.updatedAt)
        w.endObject()
    }

    static func activityToken(_ t: ActivityToken, into w: inout JSONWriter) {
        w.beginObject()
        w.member("userId", t.userId)
        w.member("deviceId", t.deviceId)
        w.member("appId", t.appId)
        w.member("token", t.token)
        w.member("environment", t.environment.rawValue)
        w.member("lastSeenAt", t.lastSeenAt)
        w.endObject()
    }

    /// One token history event. It names neither the user (the path does)
    /// nor, for `movedToUser`, the user the token went to; it carries the
    /// token's fingerprint, never the token.
    static func historyEvent(_ e: HistoryEvent, into w: inout JSONWriter) {
        w.beginObject()
        w.member("at", e.at)
        w.member("deviceId", e.deviceId)
        w.member("appId", e.appId)
        w.member("kind", e.kind.rawValue)
        w.member("activityId", e.activityId)
        w.member("action", e.action.rawValue)
        w.member("reason", e.reason?.rawValue)
        w.member("feedbackReason", e.feedbackReason?.rawValue)
        w.member("tokenFingerprint", e.tokenFingerprint)
        w.endObject()
    }

    private static func deviceMembers(_ d: DeviceRecord, into w: inout JSONWriter) {
        w.member("deviceId", d.deviceId)
        w.member("appId", d.appId)
        w.member("platform", d.platform.rawValue)
        w.member("environment", d.environment.rawValue)
        w.member("osVersion", d.osVersion)
        w.member("appVersion", d.appVersion)
        w.member("hasPushToken", d.pushToken != nil)
        w.member("hasPushToStartToken", d.pushToStartToken != nil)
        w.member("activityCount", Int64(d.activityCount))
        w.member("createdAt", d.createdAt)
        w.member("lastSeenAt", d.lastSeenAt)
        w.member("sequence", d.sequence)
    }
}

extension JSONWriter {
    /// A timestamp member in RFC 3339 (`RFC3339.write`).
    mutating func member(_ name: StaticString, _ timestamp: Timestamp) {
        key(name)
        string(unescaped: { RFC3339.write(timestamp, into: &$0) })
    }

    /// A timestamp member, `null` when absent.
    mutating func member(_ name: StaticString, _ timestamp: Timestamp?) {
        if let timestamp {
            member(name, timestamp)
        } else {
            key(name)
            null()
        }
    }
}
