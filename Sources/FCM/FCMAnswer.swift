import JSON

/// FCM's answer to one `messages:send`, as its rules read it: the message
/// `name` of a 200, or the error body's status, message, `FcmError` code and
/// whether a field violation names the token.
///
/// FCM's errors are `{"error": {"code", "message", "status", "details":
/// [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
/// "errorCode"}, {"@type": "type.googleapis.com/google.rpc.BadRequest",
/// "fieldViolations": [{"field", "description"}]}]}}`.
package struct FCMAnswer: Hashable {
    package var status: Int
    /// `projects/…/messages/…` of a 200.
    package var name: String?
    /// The error's `status` (`INVALID_ARGUMENT`, `UNAUTHENTICATED`, …).
    package var errorStatus: String?
    package var message: String?
    /// The `FcmError`'s `errorCode` (`UNREGISTERED`, `SENDER_ID_MISMATCH`, …).
    package var fcmError: String?
    /// A `BadRequest` field violation names `message.token`.
    package var tokenViolation: Bool
    /// `retry-after` in seconds.
    package var retryAfter: Int?

    static let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
    static let badRequestType = "type.googleapis.com/google.rpc.BadRequest"

    package init(status: Int, body: [UInt8], retryAfter: Int?) {
        self.status = status
        self.retryAfter = retryAfter
        tokenViolation = false
        guard case .object(let object)? = try? JSONParser.parse(body) else { return }
        if case .string(let name)? = object["name"] { self.name = name }
        guard case .object(let error)? = object["error"] else { return }
        if case .string(let text)? = error["status"] { errorStatus = text }
        if case .string(let text)? = error["message"] { message = text }
        guard case .array(let details)? = error["details"] else { return }
        for case .object(let detail) in details {
            guard case .string(let type)? = detail["@type"] else { continue }
            if type == Self.fcmErrorType, case .string(let code)? = detail["errorCode"] { fcmError = code }
            if type == Self.badRequestType, case .array(let violations)? = detail["fieldViolations"] {
                for case .object(let violation) in violations {
                    if case .string("message.token")? = violation["field"] { tokenViolation = true }
                }
            }
        }
    }

    /// `INVALID_ARGUMENT` about the token: a field violation on
    /// `message.token`, or FCM's message saying the registration token is
    /// not valid (FCM sends one or the other).
    package var isInvalidToken: Bool {
        guard status == 400, fcmError == "INVALID_ARGUMENT" || errorStatus == "INVALID_ARGUMENT" else { return false }
        if tokenViolation { return true }
        let text = (message ?? "").lowercased()
        return text.contains("registration token") && (text.contains("not a valid") || text.contains("invalid"))
    }

    /// The reason a delivery shows: the `FcmError` code, else the error's status.
    package var code: String? { fcmError ?? errorStatus }
}
