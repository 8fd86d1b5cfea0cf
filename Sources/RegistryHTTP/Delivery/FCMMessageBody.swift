import JSON
import RegistryCore

/// `fcm`, a notification's body for Android tokens: FCM's `Message` object
/// without its target (the registry names the token), checked as FCM would
/// check what the registry can know before sending.
enum FCMMessageBody {
    /// `Message` members that name a target: the registry chooses it.
    static let targetMembers = ["token", "topic", "condition", "name"]

    /// The compact text of `fcm` as sent, or `nil` when absent. A member
    /// naming a target, a `data` value that is not a string (FCM's rule)
    /// or anything but an object is a 400 naming it; more than 4,096 bytes
    /// as sent is a 413.
    static func parse(_ fields: BodyFields, _ body: [UInt8]) throws(APIError) -> [UInt8]? {
        let message: JSONObject
        switch fields.object["fcm"] {
        case nil, .null?: return nil
        case .object(let object)?: message = object
        case let other?: throw .invalidField("fcm", "must be a JSON object (FCM's Message without a target), got \(other.typeName)")
        }
        for member in targetMembers where message[member] != nil {
            throw .invalidField("fcm.\(member)", "must not be given: the registry sends to each device's own token")
        }
        switch message["data"] {
        case nil, .null?: break
        case .object(let data)?:
            for (key, value) in data.members {
                guard case .string = value else {
                    throw .invalidField("fcm.data", "values must be strings (FCM's rule); '\(key)' is \(value.typeName)")
                }
            }
        case let other?: throw .invalidField("fcm.data", "must be an object of strings, got \(other.typeName)")
        }
        if let android = message["android"], android != .null {
            guard case .object = android else { throw .invalidField("fcm.android", "must be an object, got \(android.typeName)") }
        }
        guard let text = JSONMemberText.compact("fcm", in: body) else { throw .invalidField("fcm", "must be a JSON object") }
        guard text.count <= NotificationRequest.maxPayloadBytes else {
            throw APIError(status: 413, code: "payload_too_large",
                           message: "fcm is \(text.count) bytes as sent; the registry takes at most \(NotificationRequest.maxPayloadBytes)")
        }
        return text
    }
}
