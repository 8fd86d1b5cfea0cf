import Foundation

/// Accepts a notification: resolves its target to the tokens the registry
/// holds now, and stores it with one delivery per token
/// (`DeliveryStore.enqueue`) before anything is answered. Each token goes
/// to its platform's provider with its platform's body; a token whose
/// platform has no body in the request, or no provider for the app, is a
/// delivery `failed` at once (`no_payload_for_platform`,
/// `platform_not_configured`), never sent.
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
    /// Which platforms each app can be sent on.
    let capabilities: DeliveryCapabilities
    /// Deliveries not yet final the queue may hold before a notification is
    /// refused (`--max-queued-deliveries`).
    let maxQueued: Int

    /// `--max-queued-deliveries`'s default.
    public static let defaultMaxQueued = 5_000_000

    public init(registry: any RegistryStore, deliveries: any DeliveryStore, clock: any WallClock = SystemClock(),
                maxDeliveries: Int = NotificationRequest.maxDeliveries,
                capabilities: DeliveryCapabilities = DeliveryCapabilities(everyApp: [.apns]),
                maxQueued: Int = NotificationIntake.defaultMaxQueued) {
        self.registry = registry
        self.deliveries = deliveries
        self.clock = clock
        self.maxDeliveries = maxDeliveries
        self.capabilities = capabilities
        self.maxQueued = maxQueued
    }

    /// Throws `DeliveryError.queueFull` when the queue already holds
    /// `maxQueued` deliveries not yet final (whatever this notification's
    /// size), and `RegistryError.invalidField(field: "target")` when the
    /// target holds more than `maxDeliveries` tokens.
    public func accept(_ request: NotificationRequest) async throws -> EnqueueOutcome {
        let pending = try await deliveries.pendingDeliveries()
        guard pending < maxQueued else { throw DeliveryError.queueFull(pending: pending, limit: maxQueued) }
        let targets = try await resolve(request.target, appId: request.appId)
        try checkSize(targets.count)
        let now = clock.now()
        let id = UUID().uuidString.lowercased()
        var counts = DeliveryCounts()
        let records = targets.enumerated().map { index, found in
            let refusal = self.refusal(found.platform, request)
            counts.move(from: nil, to: refusal == nil ? .queued : .failed)
            return DeliveryRecord(notificationId: id, index: UInt32(index), target: found.target,
                                  tokenFingerprint: HistoryEvent.fingerprint(of: found.token), platform: found.platform,
                                  environment: found.environment, state: refusal == nil ? .queued : .failed,
                                  apnsId: found.platform == .apns ? UUID().uuidString.lowercased() : "", status: nil,
                                  reason: refusal, attempts: 0, retries: 0, updatedAt: now, notBefore: now, claimedAt: nil)
        }
        let notification = NotificationRecord(id: id, createdAt: now, request: request, counts: counts)
        return try await deliveries.enqueue(notification, records)
    }

    /// Why a token of `platform` is not sent for `request`, or `nil`: no
    /// provider for the app comes first (it is the operator's to fix),
    /// then a request without that platform's body.
    private func refusal(_ platform: Platform, _ request: NotificationRequest) -> String? {
        if !capabilities.canSend(platform, appId: request.appId) { return DeliveryReason.platformNotConfigured }
        let body = switch platform {
        case .apns: request.payload
        case .fcm: request.fcm
        }
        return body == nil ? DeliveryReason.noPayloadForPlatform : nil
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
