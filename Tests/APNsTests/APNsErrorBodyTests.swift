import APNs
import Testing

/// APNs's error bodies: the reason, and the time a 410 carries.
@Suite struct APNsErrorBodyTests {
    @Test func errorBodies() {
        let gone = APNsAnswer.parseError(Array(#"{"reason":"Unregistered","timestamp":1700000000123}"#.utf8))
        #expect(gone.reason == "Unregistered" && gone.timestamp == 1_700_000_000_123)
        let bad = APNsAnswer.parseError(Array(#"{"reason":"BadDeviceToken"}"#.utf8))
        #expect(bad.reason == "BadDeviceToken" && bad.timestamp == nil)
        #expect(APNsAnswer.parseError([]) == (nil, nil))
        #expect(APNsAnswer.parseError(Array("<html>".utf8)) == (nil, nil))
    }
}
