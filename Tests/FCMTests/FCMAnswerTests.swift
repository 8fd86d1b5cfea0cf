import FCM
import Testing

/// FCM's answers to `messages:send` as `FCMAnswer` reads them: Google's
/// error bodies (`google.rpc.Status`, with an `FcmError` code and a
/// `google.rpc.BadRequest` field violation in `details`), a 200's `name`,
/// and what it makes of a body that is not JSON.
@Suite struct FCMAnswerTests {
    typealias F = FCMFixtures

    @Test func unregisteredIsRead() {
        let answer = F.answer(404, "NOT_FOUND", "Requested entity was not found.", fcmError: "UNREGISTERED")
        #expect(answer.status == 404 && answer.errorStatus == "NOT_FOUND" && answer.fcmError == "UNREGISTERED")
        #expect(answer.message == "Requested entity was not found." && answer.code == "UNREGISTERED")
        #expect(answer.name == nil && !answer.tokenViolation && !answer.isInvalidToken && answer.retryAfter == nil)
    }

    @Test func aFieldViolationOnTheTokenIsAnInvalidToken() {
        let answer = F.answer(400, "INVALID_ARGUMENT", "Invalid value at 'message.token' (TYPE_STRING)",
                              fcmError: "INVALID_ARGUMENT", violation: "message.token")
        #expect(answer.tokenViolation && answer.isInvalidToken && answer.code == "INVALID_ARGUMENT")
    }

    @Test func fcmsMessageAboutTheRegistrationTokenIsAnInvalidToken() {
        let answer = F.answer(400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token",
                              fcmError: "INVALID_ARGUMENT")
        #expect(!answer.tokenViolation && answer.isInvalidToken)
        // Without the FcmError detail, the error's status says the same.
        #expect(F.answer(400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token").isInvalidToken)
    }

    @Test func anInvalidArgumentAboutAnotherFieldIsNotAnInvalidToken() {
        let data = F.answer(400, "INVALID_ARGUMENT", #"Invalid value at 'message.data[0].value' (TYPE_STRING), 5"#,
                            fcmError: "INVALID_ARGUMENT", violation: "message.data[0].value")
        #expect(!data.tokenViolation && !data.isInvalidToken && data.code == "INVALID_ARGUMENT")
        #expect(!F.answer(400, "INVALID_ARGUMENT", "Request contains an invalid argument.", fcmError: "INVALID_ARGUMENT").isInvalidToken)
        // The token's words in another status are not FCM's invalid-token answer.
        #expect(!F.answer(404, "NOT_FOUND", "The registration token is not a valid FCM registration token").isInvalidToken)
    }

    @Test func okCarriesTheMessageName() {
        let answer = FCMAnswer(status: 200, body: Array(#"{"name": "projects/registry-test/messages/0:1700%ab"}"#.utf8), retryAfter: nil)
        #expect(answer.name == "projects/registry-test/messages/0:1700%ab")
        #expect(answer.code == nil && answer.message == nil && !answer.isInvalidToken)
    }

    @Test func aBodyThatIsNotJSONLeavesOnlyTheStatus() {
        for body in ["<html><body>502 Bad Gateway</body></html>", "", #"{"error": "#, #"["error"]"#] {
            let answer = FCMAnswer(status: 502, body: Array(body.utf8), retryAfter: nil)
            #expect(answer == FCMAnswer(status: 502, body: [], retryAfter: nil))
            #expect(answer.name == nil && answer.code == nil && answer.message == nil && !answer.tokenViolation)
        }
        // An `error` that is not Google's object (an OAuth-style string) is no FCM error either.
        let oauthStyle = FCMAnswer(status: 401, body: Array(#"{"error": "invalid_token"}"#.utf8), retryAfter: nil)
        #expect(oauthStyle.code == nil && oauthStyle.fcmError == nil)
    }

    @Test func retryAfterIsKept() {
        let answer = F.answer(429, "RESOURCE_EXHAUSTED", "Quota exceeded for sending messages.", fcmError: "QUOTA_EXCEEDED",
                              retryAfter: 30)
        #expect(answer.retryAfter == 30 && answer.code == "QUOTA_EXCEEDED")
        #expect(FCMAnswer(status: 503, body: Array("unavailable".utf8), retryAfter: 7).retryAfter == 7)
    }
}
