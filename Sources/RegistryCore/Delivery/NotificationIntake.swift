import Foundation

/// Accepts a notification: resolves its target to the tokens the registry
/// holds now, and stores it with one delivery per token
/// (`DeliveryStore.enqueue`) before anything is answered. Each token goes
/// to its platform's provider with its platform's body; a token whose
/// platform has no body in the request, or no provider for the app, is a
/// delivery `failed` at once (`no_payload_for_platform`,
/// `platform_not_configured`), never sent.
///
/// No target is refused for its size. A user's or users' target (at most
/// 1,000 users) is resolved whole, through the registry's reads before the
/// enqueue's transaction. An activity's is resolved one page of `pageSize`
/// tokens at a time: the first page is stored with the notification, the
/// rest is left to the sender (`NotificationExpansion`,
/// `DeliveryStore.expand`), so accepting a million holders costs one page,
/// not a million rows in one transaction. A token registered while the
/// pages are read is added when its page comes after the cursor; one
/// removed in between is found missing when its delivery is claimed
/// (`token_removed`).
public struct NotificationIntake: Sendable {
    let registry: any RegistryStore
    let deliveries: any DeliveryStore
    let clock: any WallClock
    /// Which platforms each app can be sent on.
    let capabilities: DeliveryCapabilities
    /// Deliveries not yet final the queue may hold before a notification is
    /// refused (`--max-queued-deliveries`).
    let maxQueued: Int
    /// Tokens of an activity read (and deliveries written) per transaction.
    let pageSize: Int

    /// `--max-queued-deliveries`'s default.
    public static let defaultMaxQueued = 5_000_000
    /// Activity tokens per page: the accept stores one page, the sender adds the others.
    public static let defaultPageSize = 250

    public init(registry: any RegistryStore, deliveries: any DeliveryStore, clock: any WallClock = SystemClock(),
                capabilities: DeliveryCapabilities = DeliveryCapabilities(everyApp: [.apns]),
                maxQueued: Int = NotificationIntake.defaultMaxQueued, pageSize: Int = NotificationIntake.defaultPageSize) {
        self.registry = registry
        self.deliveries = deliveries
        self.clock = clock
        self.capabilities = capabilities
        self.maxQueued = maxQueued
        self.pageSize = pageSize
    }

    /// Throws `DeliveryError.queueFull` when the queue already holds
    /// `maxQueued` deliveries not yet final, whatever this notification's size.
    public func accept(_ request: NotificationRequest) async throws -> EnqueueOutcome {
        let pending = try await deliveries.pendingDeliveries()
        guard pending < maxQueued else { throw DeliveryError.queueFull(pending: pending, limit: maxQueued) }
        let (found, expansion) = try await resolve(request.target, appId: request.appId)
        let now = clock.now()
        let id = UUID().uuidString.lowercased()
        var notification = NotificationRecord(id: id, createdAt: now, request: request, counts: DeliveryCounts())
        notification.expansion = expansion
        let records = notification.deliveries(for: found, from: 0, capabilities: capabilities, now: now)
        for record in records { notification.counts.move(from: nil, to: record.state) }
        return try await deliveries.enqueue(notification, records)
    }

    /// One page of an activity's update tokens, and the cursor of the next (`nil`: none).
    package static func activityPage(_ registry: any RegistryStore, activity: String, appId: String, cursor: String?,
                                     limit: Int) async throws -> (tokens: [ResolvedToken], next: String?) {
        let page = try await registry.activityTokens(activityId: activity, appId: appId, limit: limit, cursor: cursor)
        let tokens = page.tokens.map { token in
            ResolvedToken(target: DeliveryTarget(userId: token.userId, appId: token.appId, deviceId: token.deviceId,
                                                 kind: .activity, activityId: activity),
                          token: token.token, platform: .apns, environment: token.environment)
        }
        return (tokens, page.nextCursor)
    }

    /// The tokens stored with the notification, and where the rest of an
    /// activity starts (`nil` for every other target: resolved whole).
    private func resolve(_ target: NotificationTarget,
                         appId: String) async throws -> (tokens: [ResolvedToken], expansion: NotificationExpansion?) {
        switch target {
        case .user(let user):
            return (pushTokens(try await registry.devices(userId: user, appId: appId)), nil)
        case .users(let users):
            return (pushTokens(try await registry.devices(userIds: users, appId: appId).flatMap(\.devices)), nil)
        case .pushToStart(let user):
            let tokens = try await registry.devices(userId: user, appId: appId).compactMap { device in
                device.pushToStartToken.map { token in
                    ResolvedToken(target: DeliveryTarget(userId: device.userId, appId: device.appId, deviceId: device.deviceId,
                                                         kind: .pushToStart, activityId: nil),
                                  token: token.token, platform: .apns, environment: token.environment)
                }
            }
            return (tokens, nil)
        case .activity(let activity):
            let page = try await Self.activityPage(registry, activity: activity, appId: appId, cursor: nil, limit: pageSize)
            return (page.tokens, page.next.map { NotificationExpansion(activityId: activity, cursor: $0) })
        }
    }

    private func pushTokens(_ devices: [DeviceRecord]) -> [ResolvedToken] {
        devices.compactMap { device in
            device.pushToken.map { token in
                ResolvedToken(target: DeliveryTarget(userId: device.userId, appId: device.appId, deviceId: device.deviceId,
                                                     kind: .push, activityId: nil),
                              token: token.token, platform: device.platform, environment: token.environment)
            }
        }
    }
}

/// One token a notification's target resolved to, with its holder.
package struct ResolvedToken: Sendable {
    var target: DeliveryTarget
    var token: String
    var platform: Platform
    var environment: APNsEnvironment
}

extension NotificationRecord {
    /// The deliveries of `tokens`, numbered from `firstIndex`: `queued`, or
    /// `failed` at once when the token's platform cannot be sent for this
    /// notification (no provider for the app comes first, being the
    /// operator's to fix; then no body for that platform).
    package func deliveries(for tokens: [ResolvedToken], from firstIndex: UInt32, capabilities: DeliveryCapabilities,
                            now: Timestamp) -> [DeliveryRecord] {
        tokens.enumerated().map { offset, found in
            let refusal = refusal(found.platform, capabilities)
            return DeliveryRecord(notificationId: id, index: firstIndex + UInt32(offset), target: found.target,
                                  tokenFingerprint: HistoryEvent.fingerprint(of: found.token), platform: found.platform,
                                  environment: found.environment, state: refusal == nil ? .queued : .failed,
                                  apnsId: found.platform == .apns ? UUID().uuidString.lowercased() : "", status: nil,
                                  reason: refusal, attempts: 0, retries: 0, updatedAt: now, notBefore: now, claimedAt: nil)
        }
    }

    private func refusal(_ platform: Platform, _ capabilities: DeliveryCapabilities) -> String? {
        if !capabilities.canSend(platform, appId: appId) { return DeliveryReason.platformNotConfigured }
        let body = switch platform {
        case .apns: payload
        case .fcm: fcm
        }
        return body == nil ? DeliveryReason.noPayloadForPlatform : nil
    }
}
