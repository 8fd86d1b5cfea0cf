import FCM
import Foundation
import RegistryCore
import Synchronization

/// What the FCM suites share: claimed deliveries of the `fcm` platform,
/// FCM's error bodies as Google writes them, and an observer that records
/// the provider's requests.
enum FCMFixtures {
    static let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
    static let badRequestType = "type.googleapis.com/google.rpc.BadRequest"

    /// Google's error body (`google.rpc.Status` in JSON, pretty-printed):
    /// an FcmError detail when `fcmError` is given, and a BadRequest with
    /// one field violation when `violation` is.
    static func errorBody(_ code: Int, _ status: String, _ message: String, fcmError: String? = nil,
                          violation: String? = nil) -> [UInt8] {
        var details: [String] = []
        if let fcmError { details.append(#"{"@type": "\#(fcmErrorType)", "errorCode": "\#(fcmError)"}"#) }
        if let violation {
            details.append(#"{"@type": "\#(badRequestType)", "fieldViolations": [{"field": "\#(violation)", "description": "Invalid value"}]}"#)
        }
        let listed = details.isEmpty ? "" : ",\n    \"details\": [\n      " + details.joined(separator: ",\n      ") + "\n    ]"
        return Array("""
            {
              "error": {
                "code": \(code),
                "message": "\(message)",
                "status": "\(status)"\(listed)
              }
            }

            """.utf8)
    }

    static func answer(_ code: Int, _ status: String, _ message: String, fcmError: String? = nil, violation: String? = nil,
                       retryAfter: Int? = nil) -> FCMAnswer {
        FCMAnswer(status: code, body: errorBody(code, status, message, fcmError: fcmError, violation: violation),
                  retryAfter: retryAfter)
    }

    /// A delivery of the `fcm` platform as the sender claims it: `fcm` is
    /// the notification's FCM members (`nil`: the request gave none).
    static func claimed(token: String = "fcm-token", appId: String = "default", fcm: [UInt8]? = Array(#"{"data":{"k":"v"}}"#.utf8),
                        now: Timestamp = SystemClock().now(), retries: Int = 0,
                        expiration: Timestamp? = nil) -> ClaimedDelivery {
        let request = NotificationRequest(target: .user("alice"), appId: appId, pushType: .alert, payload: nil, fcm: fcm,
                                          priority: 10, expiration: expiration ?? now.adding(seconds: 3600), collapseId: nil,
                                          idempotencyKey: nil, digest: [])
        let delivery = DeliveryRecord(notificationId: "n", index: 0,
                                      target: DeliveryTarget(userId: "alice", appId: appId, deviceId: "pixel", kind: .push, activityId: nil),
                                      tokenFingerprint: "", platform: .fcm, environment: .production, state: .sending, apnsId: "",
                                      status: nil, reason: nil, attempts: 0, retries: retries, updatedAt: now, notBefore: now,
                                      claimedAt: now)
        return ClaimedDelivery(delivery: delivery, token: token,
                               notification: NotificationRecord(id: "n", createdAt: now, request: request, counts: DeliveryCounts()))
    }
}

/// One `providerRequest` the provider reported.
struct ReportedRequest: Sendable, Hashable {
    var provider: Platform
    var status: Int?
    var reason: String?
    var outcome: String
}

/// Records what a provider reports; every other call is ignored.
final class RecordingObserver: DeliveryObserver {
    private let recorded = Mutex<(requests: [ReportedRequest], problems: [String])>(([], []))

    var requests: [ReportedRequest] { recorded.withLock { $0.requests } }
    var problems: [String] { recorded.withLock { $0.problems } }

    func providerRequest(_ provider: Platform, status: Int?, reason: String?, outcome: String, seconds: Double) {
        recorded.withLock { $0.requests.append(ReportedRequest(provider: provider, status: status, reason: reason, outcome: outcome)) }
    }

    func configurationProblem(_ provider: Platform, reason: String, appId: String, detail: String?) {
        recorded.withLock { $0.problems.append(reason) }
    }

    func settled(_ settlement: DeliverySettlement, of claimed: ClaimedDelivery) {}
    func decidedAtClaim(_ delivery: DeliveryRecord) {}
    func abandoned(_ count: Int) {}
    func credentialRenewed(_ provider: Platform) {}
    func senderError(_ what: String, _ error: any Error) {}
    func queue(_ stats: DeliveryQueueStats, now: Timestamp) {}
    func tokensRemoved(_ count: Int, reason: FeedbackReason) {}
}
