import Foundation
@testable import RegistryClient
import Testing

/// Requests as docs/api.md spells them, and answers as the queue reads them.
@Suite struct EncodingTests {
    private func json(_ request: RegistryRequest) -> [String: Any] {
        (request.body.flatMap { try? JSONSerialization.jsonObject(with: $0) } as? [String: Any]) ?? [:]
    }

    @Test func launchUpsertCarriesTokenPlatformEnvironmentAndSequence() {
        let token = PushToken(apns: Data([0xAB, 0x01, 0xFF]), environment: .sandbox)
        #expect(token.value == "ab01ff")
        let request = RegistryOperation.registerDevice(DevicePayload(pushToken: .token(token), osVersion: "18.2", appVersion: nil))
            .request(deviceId: "phone-1", appId: "com.example.app", sequence: UInt64.max, bearer: "jwt")
        let body = json(request)
        #expect(request.method == "POST" && request.path == "/v1/devices")
        #expect(request.headers["Authorization"] == "Bearer jwt")
        #expect(request.headers["Content-Type"] == "application/json")
        #expect(body["pushToken"] as? String == "ab01ff")
        #expect(body["platform"] as? String == "apns")
        #expect(body["environment"] as? String == "sandbox")
        #expect(body["appId"] as? String == "com.example.app")
        #expect(body["appVersion"] == nil)
        #expect(String(decoding: request.body ?? Data(), as: UTF8.self).contains("\"sequence\":18446744073709551615"))
    }

    @Test func idsAreOnePathSegmentAndSignOutCarriesItsSequence() {
        let signOut = RegistryOperation.signOut.request(deviceId: "a/b?c", appId: nil, sequence: 42, bearer: "jwt")
        #expect(signOut.method == "DELETE")
        #expect(signOut.path == "/v1/devices/a%2Fb%3Fc?sequence=42")
        #expect(signOut.body == nil)
        let activity = RegistryOperation.deleteActivity("m&1").request(deviceId: "d 1", appId: "app", sequence: 7, bearer: "jwt")
        #expect(activity.path == "/v1/activities/m%261/activity-token?deviceId=d%201&appId=app",
                "token deletes carry no sequence")
    }

    @Test func answersAreClassified() {
        let now = Date(timeIntervalSince1970: 1_000_000)
        #expect(Outcome(RegistryResponse(status: 204), now: now) == .applied)
        #expect(Outcome(RegistryResponse(status: 409), now: now) == .stale)
        #expect(Outcome(RegistryResponse(status: 401), now: now) == .unauthenticated)
        #expect(Outcome(RegistryResponse(status: 413), now: now) == .rejected(status: 413, reason: nil))
        #expect(Outcome(RegistryResponse(status: 400, body: Data(#"{"error":{"code":"invalid_field","message":"x"}}"#.utf8)), now: now)
                == .rejected(status: 400, reason: "invalid_field"))
        #expect(Outcome(RegistryResponse(status: 500), now: now) == .transient(retryAfter: nil))
        #expect(Outcome(RegistryResponse(status: 503, headers: ["Retry-After": "7"]), now: now)
                == .transient(retryAfter: .seconds(7)))
        let date = "Mon, 12 Jan 1970 13:47:00 GMT"   // 1,000,020 s after the epoch
        #expect(Outcome(RegistryResponse(status: 429, headers: ["retry-after": date]), now: now)
                == .transient(retryAfter: .seconds(20)))
        #expect(Outcome(RegistryResponse(status: 429, headers: ["Retry-After": "soon"]), now: now)
                == .transient(retryAfter: nil))
    }

    @Test func backoffIsBoundedAndJittered() {
        let policy = RetryPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(300), maximumRetryAfter: .seconds(3600))
        #expect(policy.delay(afterFailures: 1, retryAfter: nil) { 1 } == .seconds(1))
        #expect(policy.delay(afterFailures: 1, retryAfter: nil) { 0 } == .milliseconds(500))
        #expect(policy.delay(afterFailures: 4, retryAfter: nil) { 1 } == .seconds(8))
        #expect(policy.delay(afterFailures: 500, retryAfter: nil) { 1 } == .seconds(300))
        #expect(policy.delay(afterFailures: 1, retryAfter: .seconds(60)) { 1 } == .seconds(60))
        #expect(policy.delay(afterFailures: 1, retryAfter: .seconds(86_400)) { 1 } == .seconds(3600))
    }
}
