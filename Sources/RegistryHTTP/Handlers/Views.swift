import JSON
import Registry

/// The two ways a device is shown. The device view (device API) never
/// carries a token; the sender view (internal API) adds them.
enum Views {
    static func device(_ d: DeviceRecord) -> JSONWriter.Value {
        .object(deviceMembers(d))
    }

    static func sender(_ d: DeviceRecord) -> JSONWriter.Value {
        var members = deviceMembers(d)
        members.insert(("userId", .string(d.userId)), at: 0)
        members.append(("pushToken", d.pushToken.map { .string($0.token) } ?? .null))
        members.append(("pushToStartToken", d.pushToStartToken.map { .string($0.token) } ?? .null))
        members.append(("pushToStartEnvironment", d.pushToStartToken.map { .string($0.environment.rawValue) } ?? .null))
        members.append(("tokenUpdatedAt", timestamp(d.pushToken?.updatedAt)))
        members.append(("pushToStartTokenUpdatedAt", timestamp(d.pushToStartToken?.updatedAt)))
        return .object(members)
    }

    static func activityToken(_ t: ActivityToken) -> JSONWriter.Value {
        .object([
            ("userId", .string(t.userId)),
            ("deviceId", .string(t.deviceId)),
            ("token", .string(t.token)),
            ("environment", .string(t.environment.rawValue)),
            ("lastSeenAt", .string(RFC3339.format(t.lastSeenAt))),
        ])
    }

    static func timestamp(_ t: Timestamp?) -> JSONWriter.Value {
        t.map { .string(RFC3339.format($0)) } ?? .null
    }

    private static func deviceMembers(_ d: DeviceRecord) -> [(String, JSONWriter.Value)] {
        [
            ("deviceId", .string(d.deviceId)),
            ("platform", .string(d.platform.rawValue)),
            ("environment", .string(d.environment.rawValue)),
            ("osVersion", d.osVersion.map { .string($0) } ?? .null),
            ("appVersion", d.appVersion.map { .string($0) } ?? .null),
            ("hasPushToken", .bool(d.pushToken != nil)),
            ("hasPushToStartToken", .bool(d.pushToStartToken != nil)),
            ("activityCount", .int(Int64(d.activityCount))),
            ("createdAt", .string(RFC3339.format(d.createdAt))),
            ("lastSeenAt", .string(RFC3339.format(d.lastSeenAt))),
            ("sequence", d.sequence.map { .uint($0) } ?? .null),
        ]
    }
}
