import Foundation

/// One request the queue can make, and its encoding per docs/api.md.
///
/// Writes that the server orders by `sequence` (the three registration
/// `POST`s and the device `DELETE`) carry one; the token `DELETE`s take none,
/// so the queue never has two requests of one session in flight (a delete
/// could otherwise overtake the registration it undoes).
enum RegistryOperation: Sendable, Equatable {
    case registerDevice(DevicePayload)
    case registerPushToStart(PushToken)
    case deletePushToStart
    case registerActivity(String, PushToken)
    case deleteActivity(String)
    case signOut
    /// Reads the device's view, whose `sequence` tells how far to jump after
    /// a 409.
    case readDevice

    /// The request that brings `resource` to `payload` (nil: gone).
    init(resource: RegistryResource, payload: Payload?) {
        switch (resource, payload) {
        case (.device, .device(let device)): self = .registerDevice(device)
        case (.device, _): self = .signOut
        case (.pushToStart, .token(let token)): self = .registerPushToStart(token)
        case (.pushToStart, _): self = .deletePushToStart
        case (.activity(let id), .token(let token)): self = .registerActivity(id, token)
        case (.activity(let id), _): self = .deleteActivity(id)
        }
    }

    var isSequenced: Bool {
        switch self {
        case .deletePushToStart, .deleteActivity, .readDevice: false
        default: true
        }
    }

    func request(deviceId: String, appId: String?, sequence: UInt64?, bearer: String) -> RegistryRequest {
        let device = Self.segment(deviceId)
        var fields: [(String, JSONBody.Value)] = [("deviceId", .string(deviceId))]
        if let appId { fields.append(("appId", .string(appId))) }
        let method: String, path: String
        var query: [(String, String)] = []
        switch self {
        case .registerDevice(let payload):
            (method, path) = ("POST", "/v1/devices")
            switch payload.pushToken {
            case .unknown: break
            case .withdrawn: fields.append(("pushToken", .null))
            case .token(let token):
                fields += [("pushToken", .string(token.value)), ("platform", .string(token.platform.rawValue)),
                           ("environment", .string(token.environment.rawValue))]
            }
            if let os = payload.osVersion { fields.append(("osVersion", .string(os))) }
            if let app = payload.appVersion { fields.append(("appVersion", .string(app))) }
        case .registerPushToStart(let token):
            (method, path) = ("POST", "/v1/devices/push-to-start-token")
            fields += [("token", .string(token.value)), ("environment", .string(token.environment.rawValue))]
        case .registerActivity(let activityId, let token):
            (method, path) = ("POST", "/v1/activities/\(Self.segment(activityId))/activity-token")
            fields += [("token", .string(token.value)), ("environment", .string(token.environment.rawValue))]
        case .deletePushToStart:
            (method, path) = ("DELETE", "/v1/devices/\(device)/push-to-start-token")
        case .deleteActivity(let activityId):
            (method, path) = ("DELETE", "/v1/activities/\(Self.segment(activityId))/activity-token")
            query.append(("deviceId", deviceId))
        case .signOut:
            (method, path) = ("DELETE", "/v1/devices/\(device)")
        case .readDevice:
            (method, path) = ("GET", "/v1/devices/\(device)")
        }
        var headers = ["Authorization": "Bearer \(bearer)"]
        var body: Data?
        if method == "POST" {
            if let sequence { fields.append(("sequence", .number(sequence))) }
            headers["Content-Type"] = "application/json"
            body = JSONBody(fields: fields).data
        } else {
            if let appId { query.append(("appId", appId)) }
            if let sequence, isSequenced { query.append(("sequence", String(sequence))) }
        }
        let queryText = query.isEmpty ? "" : "?" + query.map { "\($0.0)=\(Self.segment($0.1))" }.joined(separator: "&")
        return RegistryRequest(method: method, path: path + queryText, headers: headers, body: body)
    }

    /// Percent-encodes everything but RFC 3986's unreserved characters, so an
    /// id holding `/`, `?` or `&` stays one path segment or query value.
    static func segment(_ text: String) -> String {
        var allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}

/// A flat JSON object in field order. `JSONEncoder` does the escaping and
/// writes a `UInt64` exactly; the explicit `null` is why this is not a
/// synthesized `Codable` struct (which omits nil fields).
struct JSONBody: Encodable {
    enum Value { case string(String), number(UInt64), null }

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    var fields: [(String, Value)]

    var data: Data { (try? JSONEncoder().encode(self)) ?? Data("{}".utf8) }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for (name, value) in fields {
            switch value {
            case .string(let text): try container.encode(text, forKey: Key(stringValue: name))
            case .number(let number): try container.encode(number, forKey: Key(stringValue: name))
            case .null: try container.encodeNil(forKey: Key(stringValue: name))
            }
        }
    }
}
