/// Every route of API.md. Path parameters are kept as sent (still
/// percent-encoded): decoding and validating them is the "fields and query
/// parameters" step, which comes after credential, media type and size.
public enum Route: Hashable, Sendable {
    case registerDevice
    case listDevices
    case getDevice(deviceId: String)
    case signOut(deviceId: String)
    case registerPushToStart
    case removePushToStart(deviceId: String)
    case registerActivityToken(activityId: String)
    case removeActivityToken(activityId: String)
    case userDevices(userId: String)
    case lookupUsers
    case activityTokens(activityId: String)
    case feedback
    case sweep
    case stats
    case metrics
    case healthz

    /// Who may call it.
    public enum Surface: Sendable {
        /// `/v1`: a device JWT.
        case device
        /// `/internal/v1` and `/metrics`: the internal API key.
        case `internal`
        /// `/healthz`: anyone.
        case open
    }

    public var surface: Surface {
        switch self {
        case .registerDevice, .listDevices, .getDevice, .signOut, .registerPushToStart, .removePushToStart,
             .registerActivityToken, .removeActivityToken:
            .device
        case .userDevices, .lookupUsers, .activityTokens, .feedback, .sweep, .stats, .metrics:
            .internal
        case .healthz:
            .open
        }
    }

    /// Whether the route reads a JSON body (and so checks media type and size).
    public var takesBody: Bool {
        switch self {
        case .registerDevice, .registerPushToStart, .registerActivityToken, .lookupUsers, .feedback, .sweep: true
        default: false
        }
    }

    /// Body limit from API.md: 16 KiB on the device API, 1 MiB on the internal API.
    public var maxBodyBytes: Int {
        switch surface {
        case .device, .open: 16 * 1024
        case .internal: 1024 * 1024
        }
    }

    /// A stable label for metrics and logs (the path template, no ids).
    public var label: String {
        switch self {
        case .registerDevice: "POST /v1/devices"
        case .listDevices: "GET /v1/devices"
        case .getDevice: "GET /v1/devices/{deviceId}"
        case .signOut: "DELETE /v1/devices/{deviceId}"
        case .registerPushToStart: "POST /v1/devices/push-to-start-token"
        case .removePushToStart: "DELETE /v1/devices/{deviceId}/push-to-start-token"
        case .registerActivityToken: "POST /v1/activities/{activityId}/activity-token"
        case .removeActivityToken: "DELETE /v1/activities/{activityId}/activity-token"
        case .userDevices: "GET /internal/v1/users/{userId}/devices"
        case .lookupUsers: "POST /internal/v1/users/lookup"
        case .activityTokens: "GET /internal/v1/activities/{activityId}/tokens"
        case .feedback: "POST /internal/v1/feedback"
        case .sweep: "POST /internal/v1/sweep"
        case .stats: "GET /internal/v1/stats"
        case .metrics: "GET /metrics"
        case .healthz: "GET /healthz"
        }
    }
}
