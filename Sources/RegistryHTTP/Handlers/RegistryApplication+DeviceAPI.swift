import HTTPServer
import JSON
import RegistryCore

/// `/v1/...`: a device acting on its own user's records. The user is always
/// the JWT's `sub`; another user's `deviceId` answers as a missing device.
///
/// A record is (user, app, device) (docs/api.md "App families"): the reads
/// and deletes of one record take an optional `appId` query parameter
/// (`default` when absent, as for a v1 client), and the list shows every
/// app's records unless `?appId=` narrows it. An app the operator did not
/// declare (API v1.2, docs/api.md) is as empty: a read naming it finds nothing, a
/// delete changes nothing (the store refuses registrations naming it).
extension RegistryApplication {
    func listDevices(_ call: Call, _ reads: any RegistryReads) throws -> HTTPResponse {
        let appId = try FieldCheck.appId(in: QueryParameters(call.request.query))
        let undeclared = appId.map { !store.declaredApps.contains($0) } ?? false
        let devices = undeclared ? [] : try reads.devices(userId: call.userId, appId: appId)
        return Self.devicesDocument(devices, Views.device(_:into:))
    }

    func getDevice(_ call: Call, _ reads: any RegistryReads) throws -> HTTPResponse {
        let deviceId = try call.parameter(FieldCheck.deviceId)
        let appId = try FieldCheck.appId(in: QueryParameters(call.request.query)) ?? Identifier.defaultAppId
        guard store.declaredApps.contains(appId),
              let device = try reads.device(userId: call.userId, appId: appId, deviceId: deviceId) else {
            throw APIError.recordNotFound("device")
        }
        return Self.deviceDocument(200, device)
    }

    func signOut(_ call: Call) async throws -> HTTPResponse {
        let deviceId = try call.parameter(FieldCheck.deviceId)
        let query = try QueryParameters(call.request.query)
        let sequence = try query.single("sequence").map(FieldCheck.sequence)
        let appId = try FieldCheck.appId(in: query) ?? Identifier.defaultAppId
        try await store.signOut(userId: call.userId, appId: appId, deviceId: deviceId, sequence: sequence)
        return Self.noContent
    }

    func registerPushToStart(_ call: Call) async throws -> HTTPResponse {
        let fields = try BodyFields(body: call.request.body)
        let registration = PushToStartRegistration(
            userId: call.userId,
            deviceId: try FieldCheck.deviceId(fields.requiredString("deviceId")),
            token: try FieldCheck.apnsToken(fields.requiredString("token")),
            environment: try fields.optionalEnum("environment", APNsEnvironment.self),
            sequence: try fields.optionalSequence(),
            appId: try fields.optionalAppId() ?? Identifier.defaultAppId)
        let device = try await store.registerPushToStartToken(registration)
        return Self.deviceDocument(200, device)
    }

    func removePushToStart(_ call: Call) async throws -> HTTPResponse {
        let deviceId = try call.parameter(FieldCheck.deviceId)
        let appId = try FieldCheck.appId(in: QueryParameters(call.request.query)) ?? Identifier.defaultAppId
        try await store.removePushToStartToken(userId: call.userId, appId: appId, deviceId: deviceId)
        return Self.noContent
    }

    func registerActivityToken(_ call: Call) async throws -> HTTPResponse {
        // docs/api.md's order: the body must be JSON before fields and parameters are judged.
        let fields = try BodyFields(body: call.request.body)
        let activityId = try call.parameter(FieldCheck.activityId)
        let registration = ActivityTokenRegistration(
            activityId: activityId, userId: call.userId,
            deviceId: try FieldCheck.deviceId(fields.requiredString("deviceId")),
            token: try FieldCheck.apnsToken(fields.requiredString("token")),
            environment: try fields.optionalEnum("environment", APNsEnvironment.self),
            sequence: try fields.optionalSequence(),
            appId: try fields.optionalAppId() ?? Identifier.defaultAppId)
        let token = try await store.registerActivityToken(registration)
        return Self.json(200, capacity: 256) { w in
            w.beginObject()
            w.member("activityId", token.activityId)
            w.member("deviceId", token.deviceId)
            w.member("appId", token.appId)
            w.member("lastSeenAt", token.lastSeenAt)
            w.endObject()
        }
    }

    func removeActivityToken(_ call: Call) async throws -> HTTPResponse {
        let activityId = try call.parameter(FieldCheck.activityId)
        let query = try QueryParameters(call.request.query)
        guard let deviceId = try query.single("deviceId") else {
            throw APIError.invalidField("deviceId", "query parameter is required")
        }
        let checkedDeviceId = try FieldCheck.deviceId(deviceId)
        let appId = try FieldCheck.appId(in: query) ?? Identifier.defaultAppId
        try await store.removeActivityToken(activityId: activityId, userId: call.userId, appId: appId,
                                            deviceId: checkedDeviceId)
        return Self.noContent
    }

    func registerDevice(_ call: Call) async throws -> HTTPResponse {
        let userId = call.userId
        let fields = try BodyFields(body: call.request.body)
        let deviceId = try FieldCheck.deviceId(fields.requiredString("deviceId"))
        let platform = try fields.optionalEnum("platform", Platform.self)
        let pushToken: TokenUpdate
        switch try fields.string("pushToken") {
        case .absent: pushToken = .keep
        case .null: pushToken = .remove
        case .value(let token):
            // With the platform known here, reject a bad token before the
            // writer sees it; otherwise the store checks it against the
            // stored platform.
            if let platform, case .failure(let problem) = Identifier.normalizePushToken(token, platform: platform) {
                throw APIError.invalidField("pushToken", problem.message)
            }
            pushToken = .set(token)
        }
        let registration = DeviceRegistration(
            userId: userId, deviceId: deviceId, pushToken: pushToken, platform: platform,
            environment: try fields.optionalEnum("environment", APNsEnvironment.self),
            osVersion: try FieldCheck.version(fields.optionalString("osVersion"), field: "osVersion"),
            appVersion: try FieldCheck.version(fields.optionalString("appVersion"), field: "appVersion"),
            sequence: try fields.optionalSequence(),
            appId: try fields.optionalAppId() ?? Identifier.defaultAppId)
        let outcome = try await store.registerDevice(registration)
        return Self.deviceDocument(outcome.created ? 201 : 200, outcome.device)
    }

    /// `{"device": view}`.
    private static func deviceDocument(_ status: Int, _ device: DeviceRecord) -> HTTPResponse {
        json(status, capacity: bytesPerDevice) { w in
            w.beginObject()
            w.key("device")
            Views.device(device, into: &w)
            w.endObject()
        }
    }
}
