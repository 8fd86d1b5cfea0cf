import Crypto
import JSON
import RegistryCore

/// `POST /internal/v1/notifications`'s body, checked member by member (each
/// failure a 400 naming the member, an oversized payload a 413).
enum NotificationBody {
    static func parse(_ body: [UInt8], capabilities: DeliveryCapabilities) throws(APIError) -> NotificationRequest {
        let fields = try BodyFields(body: body)
        let target = try self.target(fields)
        let appId = try fields.optionalAppId() ?? Identifier.defaultAppId
        guard capabilities.servesAny(appId: appId) else {
            throw .invalidField("appId", "names an app without an APNs topic or FCM service account "
                                + "(--apns-topic \(appId)=BUNDLEID, --fcm-service-account \(appId)=FILE)")
        }
        let pushType = try self.pushType(fields, target)
        let payload = try self.payload(fields, body)
        let fcm = try FCMMessageBody.parse(fields, body)
        guard payload != nil || fcm != nil else { throw .invalidField("payload", "is required (or fcm, for Android tokens)") }
        let priority = Int(try integer(fields, "priority") ?? (pushType == .background ? 5 : 10))
        guard [10, 5, 1].contains(priority) else { throw .invalidField("priority", "must be 10, 5 or 1") }
        let givenExpiration = try integer(fields, "expiration")
        if let givenExpiration, givenExpiration < 0 || givenExpiration > 253_402_300_799 {
            throw .invalidField("expiration", "must be epoch seconds")
        }
        let collapseId = try fields.optionalString("collapseId")
        if let collapseId, collapseId.isEmpty || collapseId.utf8.count > NotificationRequest.maxCollapseIdBytes
            || !isPrintableASCII(collapseId) {
            throw .invalidField("collapseId", "must be 1 to \(NotificationRequest.maxCollapseIdBytes) printable ASCII characters")
        }
        let idempotencyKey = try fields.optionalString("idempotencyKey")
        if let idempotencyKey, idempotencyKey.isEmpty || idempotencyKey.utf8.count > NotificationRequest.maxIdempotencyKeyBytes
            || !isPrintableASCII(idempotencyKey) {
            throw .invalidField("idempotencyKey", "must be 1 to \(NotificationRequest.maxIdempotencyKeyBytes) printable ASCII characters")
        }
        // The same request is the same target, app, push type, payload bytes and options as given
        // (the expiration as given, not its default, which moves with the clock).
        var canonical = JSONWriter()
        canonical.write(.array([
            .string(describe(target)), .string(appId), .string(pushType.rawValue),
            payload.map { .string(String(decoding: $0, as: UTF8.self)) } ?? .null,
            .int(Int64(priority)), givenExpiration.map { .int($0) } ?? .null, collapseId.map { .string($0) } ?? .null,
        ] + (fcm.map { [.string(String(decoding: $0, as: UTF8.self))] } ?? [])))
        return NotificationRequest(target: target, appId: appId, pushType: pushType, payload: payload, fcm: fcm, priority: priority,
                                   expiration: givenExpiration.map { Timestamp(milliseconds: $0 * 1000) }, collapseId: collapseId, idempotencyKey: idempotencyKey,
                                   digest: SHA256.hash(canonical.bytes))
    }

    /// `payload`, APNs's body: a JSON object as sent (compact), at most
    /// 4,096 bytes (413 beyond); `nil` when absent.
    private static func payload(_ fields: BodyFields, _ body: [UInt8]) throws(APIError) -> [UInt8]? {
        switch fields.object["payload"] {
        case nil, .null?: return nil
        case .object?: break
        case let other?: throw .invalidField("payload", "must be a JSON object, got \(other.typeName)")
        }
        guard let payload = JSONMemberText.compact("payload", in: body) else { throw .invalidField("payload", "must be a JSON object") }
        guard payload.count <= NotificationRequest.maxPayloadBytes else {
            throw APIError(status: 413, code: "payload_too_large",
                           message: "payload is \(payload.count) bytes as sent; APNs takes at most \(NotificationRequest.maxPayloadBytes)")
        }
        return payload
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

    /// 0x20 to 0x7E: what an HTTP header value (`apns-collapse-id`) and a log line carry unchanged.
    private static func isPrintableASCII(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 >= 0x20 && $0 <= 0x7E }
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
