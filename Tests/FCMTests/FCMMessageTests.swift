import FCM
import Testing

/// The body of `messages:send`: the caller's members byte for byte, the
/// token first, and `android.ttl` added only where the caller gave none.
@Suite struct FCMMessageTests {
    static func body(_ fcm: String, seconds: Int64 = 3599) -> String {
        String(decoding: FCMMessage.body(fcm: Array(fcm.utf8), token: "tok", secondsLeft: seconds), as: UTF8.self)
    }

    @Test func anEmptyMessageGetsTheTokenAndATTL() {
        #expect(Self.body("{}") == #"{"message":{"token":"tok","android":{"ttl":"3599s"}}}"#)
    }

    @Test func membersAreKeptAsGivenAndAnAndroidObjectGainsItsTTL() {
        #expect(Self.body(#"{"data":{"a":"1.50"},"android":{"priority":"high"},"x":1.0}"#)
                == #"{"message":{"token":"tok","data":{"a":"1.50"},"android":{"ttl":"3599s","priority":"high"},"x":1.0}}"#)
        #expect(Self.body(#"{"android":{}}"#) == #"{"message":{"token":"tok","android":{"ttl":"3599s"}}}"#)
    }

    @Test func aGivenTTLIsNeverChanged() {
        let fcm = #"{"android":{"ttl":"60s","priority":"normal"},"notification":{"title":"Goal!"}}"#
        #expect(Self.body(fcm) == #"{"message":{"token":"tok","# + fcm.dropFirst() + "}")
    }

    @Test func theTTLIsBoundedByFCMsLimitAndNeverNegative() {
        #expect(Self.body("{}", seconds: 90 * 24 * 3600).contains(#""ttl":"2419200s""#))
        #expect(Self.body("{}", seconds: -5).contains(#""ttl":"0s""#))
    }

    @Test func theTokenIsEscapedAsAJSONString() {
        let body = String(decoding: FCMMessage.body(fcm: Array("{}".utf8), token: #"a"b\c"#, secondsLeft: 1), as: UTF8.self)
        #expect(body.hasPrefix(#"{"message":{"token":"a\"b\\c","#))
    }
}
