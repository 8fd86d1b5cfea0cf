import Foundation
import RegistryCore

package extension StoreFixture {
    /// The store's delivery queue (each engine's store keeps its own).
    var deliveries: any DeliveryStore { maintenance }

    /// The API's intake on this store, at the fixture's clock.
    var intake: NotificationIntake { NotificationIntake(registry: store, deliveries: deliveries, clock: clock) }

    /// An alert of the default app to `target`, expiring `expiresIn` seconds from now.
    func request(_ target: NotificationTarget, appId: String = Identifier.defaultAppId, priority: Int = 10, expiresIn: Int64 = 3_600,
                 idempotencyKey: String? = nil, digest: [UInt8] = [1]) -> NotificationRequest {
        NotificationRequest(target: target, appId: appId, pushType: .alert,
                            payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8), priority: priority,
                            expiration: Timestamp(milliseconds: clock.now().milliseconds + expiresIn * 1000), collapseId: nil,
                            idempotencyKey: idempotencyKey, digest: digest)
    }

    /// Accepts `request(...)` as the API does (its target resolved through the registry's reads).
    @discardableResult
    func notify(_ target: NotificationTarget, appId: String = Identifier.defaultAppId, priority: Int = 10, expiresIn: Int64 = 3_600,
                idempotencyKey: String? = nil, digest: [UInt8] = [1]) async throws -> EnqueueOutcome {
        try await intake.accept(request(target, appId: appId, priority: priority, expiresIn: expiresIn, idempotencyKey: idempotencyKey,
                                        digest: digest))
    }

    /// Every delivery of a notification, walking pages of `pageSize`.
    func allDeliveries(_ notificationId: String, pageSize: Int = 1_000) async throws -> [DeliveryRecord] {
        var all: [DeliveryRecord] = []
        while true {
            let page = try await deliveries.deliveries(notificationId: notificationId, from: UInt32(all.count), limit: pageSize)
            all += page
            if page.count < pageSize { return all }
        }
    }
}

package extension EnqueueOutcome {
    var record: NotificationRecord {
        switch self {
        case .accepted(let record), .existing(let record): record
        }
    }

    var isAccepted: Bool {
        if case .accepted = self { return true }
        return false
    }
}

/// A notification accepted at `now` with one queued delivery per holder's
/// push token (`holders[i]` is (user, device) of delivery `i`), built
/// without the registry: for enqueues larger than a test registers.
package func notificationRecords(holders: [(user: String, device: String)], now: Timestamp, expiresIn: Int64 = 3_600,
                                 idempotencyKey: String? = nil) -> (NotificationRecord, [DeliveryRecord]) {
    let id = UUID().uuidString.lowercased()
    var counts = DeliveryCounts()
    let deliveries = holders.enumerated().map { index, holder in
        counts.move(from: nil, to: .queued)
        return DeliveryRecord(notificationId: id, index: UInt32(index),
                              target: DeliveryTarget(userId: holder.user, appId: Identifier.defaultAppId, deviceId: holder.device,
                                                     kind: .push, activityId: nil),
                              tokenFingerprint: HistoryEvent.fingerprint(of: apnsToken(index)), platform: .apns,
                              environment: .production, state: .queued, apnsId: UUID().uuidString.lowercased(), status: nil,
                              reason: nil, attempts: 0, retries: 0, updatedAt: now, notBefore: now, claimedAt: nil)
    }
    let request = NotificationRequest(target: .users(Array(Set(holders.map(\.user)))), appId: Identifier.defaultAppId,
                                      pushType: .alert, payload: Array(#"{"aps":{}}"#.utf8), priority: 5,
                                      expiration: Timestamp(milliseconds: now.milliseconds + expiresIn * 1000),
                                      collapseId: nil, idempotencyKey: idempotencyKey, digest: [9])
    return (NotificationRecord(id: id, createdAt: now, request: request, counts: counts), deliveries)
}

/// What a sender decides for `claimed`: `state` after `requests` requests.
package func settlement(_ claimed: ClaimedDelivery, _ state: DeliveryState, status: Int? = nil, reason: String? = nil,
                        requests: Int = 1, retried: Bool = false, notBefore: Timestamp? = nil) -> DeliverySettlement {
    DeliverySettlement(notificationId: claimed.delivery.notificationId, index: claimed.delivery.index, state: state,
                       status: status, reason: reason, environment: claimed.delivery.environment, requests: requests,
                       retried: retried, notBefore: notBefore, tokenFingerprint: claimed.delivery.tokenFingerprint)
}
