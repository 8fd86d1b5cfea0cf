import Foundation

/// Accepts a notification: resolves its target to the tokens the registry
/// holds now, and stores it with one delivery per token
/// (`DeliveryStore.enqueue`) before anything is answered.
///
/// Targets are resolved through the registry's reads, before the enqueue's
/// transaction: a token registered in between is not added, as for any
/// later registration; one removed in between is found missing when its
/// delivery is claimed (`token_removed`).
public struct NotificationIntake: Sendable {
    let registry: any RegistryStore
    let deliveries: any DeliveryStore
    let clock: any WallClock
    /// The most tokens one notification's target may hold.
    let maxDeliveries: Int

    public init(registry: any RegistryStore, deliveries: any DeliveryStore, clock: any WallClock = SystemClock(),
                maxDeliveries: Int = NotificationRequest.maxDeliveries) {
        self.registry = registry
        self.deliveries = deliveries
        self.clock = clock
        self.maxDeliveries = maxDeliveries
    }

    /// Throws `RegistryError.invalidField(field: "target")` when the target
    /// holds more than `maxDeliveries` tokens.
    public func accept(_ request: NotificationRequest) async throws -> EnqueueOutcome {
        let targets = try await resolve(request.target, appId: request.appId)
        try checkSize(targets.count)
        let now = clock.now()
        let id = UUID().uuidString.lowercased()
        var counts = DeliveryCounts()
        let records = targets.enumerated().map { index, found in
            let apns = found.platform == .apns
            counts.move(from: nil, to: apns ? .queued : .failed)
            return DeliveryRecord(notificationId: id, index: UInt32(index), target: found.target,
                                  tokenFingerprint: HistoryEvent.fingerprint(of: found.token), platform: found.platform,
                                  environment: found.environment, state: apns ? .queued : .failed,
                                  apnsId: UUID().uuidString.lowercased(), status: nil,
                                  reason: apns ? nil : DeliveryReason.platformNotConfigured, attempts: 0, retries: 0,
                                  updatedAt: now, notBefore: now, claimedAt: nil)
        }
        let notification = NotificationRecord(id: id, createdAt: now, request: request, counts: counts)
        return try await deliveries.enqueue(notification, records)
    }

    struct Found {
        var target: DeliveryTarget
        var token: String
        var platform: Platform
        var environment: APNsEnvironment
    }

    func resolve(_ target: NotificationTarget, appId: String) async throws -> [Found] {
        switch target {
        case .user(let user):
            return pushTokens(try await registry.devices(userId: user, appId: appId))
        case .users(let users):
            return pushTokens(try await registry.devices(userIds: users, appId: appId).flatMap(\.devices))
        case .pushToStart(let user):
            return try await registry.devices(userId: user, appId: appId).compactMap { device in
                device.pushToStartToken.map { token in
                    Found(target: DeliveryTarget(userId: device.userId, appId: device.appId, deviceId: device.deviceId,
                                                 kind: .pushToStart, activityId: nil),
                          token: token.token, platform: .apns, environment: token.environment)
                }
            }
        case .activity(let activity):
            var found: [Found] = []
            var cursor: String?
            repeat {
                let page = try await registry.activityTokens(activityId: activity, appId: appId, limit: 1000, cursor: cursor)
                for token in page.tokens {
                    found.append(Found(target: DeliveryTarget(userId: token.userId, appId: token.appId, deviceId: token.deviceId,
                                                              kind: .activity, activityId: activity),
                                       token: token.token, platform: .apns, environment: token.environment))
                }
                try checkSize(found.count)  // and stop paging through a huge activity early
                cursor = page.nextCursor
            } while cursor != nil
            return found
        }
    }

    private func pushTokens(_ devices: [DeviceRecord]) -> [Found] {
        devices.compactMap { device in
            device.pushToken.map { token in
                Found(target: DeliveryTarget(userId: device.userId, appId: device.appId, deviceId: device.deviceId,
                                             kind: .push, activityId: nil),
                      token: token.token, platform: device.platform, environment: token.environment)
            }
        }
    }

    private func checkSize(_ count: Int) throws {
        guard count <= maxDeliveries else {
            throw RegistryError.invalidField(field: "target", message: "holds more than \(maxDeliveries) tokens")
        }
    }
}
