import Crypto
import JSON
import RegistryCore

/// `POST /internal/v1/notifications`'s body, checked member by member (each
/// failure a 400 naming the member, an oversized payload a 413).
enum NotificationBody {
    static func parse(_ body: [UInt8], topics: [String: String]) throws(APIError) -> NotificationRequest {
        let fields = try BodyFields(body: body)
        let target = try self.target(fields)
        let appId = try fields.optionalAppId() ?? Identifier.defaultAppId
        guard topics[appId] != nil else {
            throw .invalidField("appId", "names an app without an APNs topic (--apns-topic \(appId)=BUNDLEID)")
        }
        let pushType = try self.pushType(fields, target)
        guard case .object? = fields.object["payload"], let payload = JSONMemberText.compact("payload", in: body) else {
            throw .invalidField("payload", fields.object["payload"] == nil ? "is required" : "must be a JSON object")
        }
        guard payload.count <= NotificationRequest.maxPayloadBytes else {
            throw APIError(status: 413, code: "payload_too_large",
                           message: "payload is \(payload.count) bytes as sent; APNs takes at most \(NotificationRequest.maxPayloadBytes)")
        }
        let priority = Int(try integer(fields, "priority") ?? (pushType == .background ? 5 : 10))
        guard [10, 5, 1].contains(priority) else { throw .invalidField("priority", "must be 10, 5 or 1") }
        let givenExpiration = try integer(fields, "expiration")
        if let givenExpiration, givenExpiration < 0 || givenExpiration > 253_402_300_799 {
            throw .invalidField("expiration", "must be epoch seconds")
        }
        let collapseId = try fields.optionalString("collapseId")
        if let collapseId, collapseId.isEmpty || collapseId.utf8.count > NotificationRequest.maxCollapseIdBytes {
            throw .invalidField("collapseId", "must be 1 to \(NotificationRequest.maxCollapseIdBytes) bytes")
        }
        let idempotencyKey = try fields.optionalString("idempotencyKey")
        if let idempotencyKey, idempotencyKey.isEmpty || idempotencyKey.utf8.count > NotificationRequest.maxIdempotencyKeyBytes {
            throw .invalidField("idempotencyKey", "must be 1 to \(NotificationRequest.maxIdempotencyKeyBytes) bytes")
        }
        // The same request is the same target, app, push type, payload bytes and options as given
        // (the expiration as given, not its default, which moves with the clock).
        var canonical = JSONWriter()
        canonical.write(.array([
            .string(describe(target)), .string(appId), .string(pushType.rawValue), .string(String(decoding: payload, as: UTF8.self)),
            .int(Int64(priority)), givenExpiration.map { .int($0) } ?? .null, collapseId.map { .string($0) } ?? .null,
        ]))
        return NotificationRequest(target: target, appId: appId, pushType: pushType, payload: payload, priority: priority,
                                   expiration: givenExpiration.map { Timestamp(milliseconds: $0 * 1000) }, collapseId: collapseId, idempotencyKey: idempotencyKey,
                                   digest: SHA256.hash(canonical.bytes))
    }

    private static func target(_ fields: BodyFields) throws(APIError) -> NotificationTarget {
        guard let value = fields.object["target"], value != .null else { throw .invalidField("target", "is required") }
        guard case .object(let object) = value else { throw .invalidField("target", "must be an object, got \(value.typeName)") }
        let target = BodyFields(object, path: "target.")
        let given = ["userId", "userIds", "activityId"].filter { target.object[$0] != nil && target.object[$0] != .null }
        guard given.count == 1 else {
            throw .invalidField("target", "must hold exactly one of userId, userIds, activityId")
        }
        let pushToStart = try target.optionalBool("pushToStart") ?? false
        if pushToStart && given[0] != "userId" { throw .invalidField("target.pushToStart", "goes with target.userId only") }
        switch given[0] {
        case "userId":
            let user = try FieldCheck.userId(try target.requiredString("userId"), field: "target.userId")
            return pushToStart ? .pushToStart(user: user) : .user(user)
        case "activityId":
            return .activity(try FieldCheck.activityId(try target.requiredString("activityId"), field: "target.activityId"))
        default:
            guard case .array(let elements)? = target.object["userIds"] else {
                throw .invalidField("target.userIds", "must be an array of strings")
            }
            guard !elements.isEmpty, elements.count <= NotificationRequest.maxUserIds else {
                throw .invalidField("target.userIds", "must hold 1 to \(NotificationRequest.maxUserIds) ids")
            }
            var users: [String] = []
            for (index, element) in elements.enumerated() {
                guard case .string(let id) = element else {
                    throw .invalidField("target.userIds[\(index)]", "must be a string, got \(element.typeName)")
                }
                users.append(try FieldCheck.userId(id, field: "target.userIds[\(index)]"))
            }
            return .users(users)
        }
    }

    private static func pushType(_ fields: BodyFields, _ target: NotificationTarget) throws(APIError) -> PushType {
        let liveActivityTarget: Bool
        switch target {
        case .activity, .pushToStart: liveActivityTarget = true
        case .user, .users: liveActivityTarget = false
        }
        guard let given = try fields.optionalEnum("pushType", PushType.self) else {
            return liveActivityTarget ? .liveactivity : .alert
        }
        if liveActivityTarget && given != .liveactivity {
            throw .invalidField("pushType", "must be 'liveactivity' for an activityId or pushToStart target")
        }
        return given
    }

    private static func integer(_ fields: BodyFields, _ name: String) throws(APIError) -> Int64? {
        switch fields.object[name] {
        case nil, .null?: return nil
        case let value? where value.exactInt64 != nil: return value.exactInt64
        case let other?: throw .invalidField(name, "must be an integer, got \(other.typeName)")
        }
    }

    private static func describe(_ target: NotificationTarget) -> String {
        switch target {
        case .user(let user): "user:\(user)"
        case .users(let users): "users:" + users.map { "\($0.utf8.count):\($0)" }.joined()
        case .pushToStart(let user): "pushToStart:\(user)"
        case .activity(let activity): "activity:\(activity)"
        }
    }
}
