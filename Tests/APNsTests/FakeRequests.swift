import APNs
import APNsTestSupport
import Foundation

/// A request to the fake with the test topic.
func request(_ token: String, host: APNsHost = .production, collapseId: String? = nil) -> APNsRequest {
    APNsRequest(deviceToken: token, host: host, topic: FakeAPNs.topic, pushType: "alert", priority: 10,
                expiration: 1_700_000_000, collapseId: collapseId, apnsId: UUID().uuidString.lowercased(),
                payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
}

/// A 64-digit hex token ending in `suffix`.
func token(_ suffix: String) -> String {
    String(repeating: "0", count: 64 - suffix.count) + suffix
}
