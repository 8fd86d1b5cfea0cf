import RegistryCore

/// Helpers of the v1.1 behaviour suites (history, environment correction,
/// app families, sealing), written against `RegistryStore` only.

/// The fingerprints of the tokens the v1.1 suites use, worked out outside
/// the store (`printf %s TOKEN | sha256sum | cut -c1-12`), so a fingerprint
/// the store computes wrongly cannot agree with itself.
package enum KnownFingerprint {
    /// `apnsToken(1)`.
    package static let apns1 = "c386d8e8d073"
    /// `apnsToken(2)`.
    package static let apns2 = "68e4d75d23e3"
    /// `apnsToken(0xabc)`, also when it was registered in uppercase.
    package static let apnsABC = "c6b303f35e5c"
    /// The FCM token `Fcm:Token-1`, as sent.
    package static let fcm1 = "3d6e7503f0b5"
}

/// An event's shape without its time, for comparing lists of events.
package struct EventShape: Hashable, CustomStringConvertible {
    package var appId = "default"
    package var deviceId: String
    package var kind: HistoryEvent.Kind
    package var activityId: String?
    package var action: HistoryEvent.Action
    package var reason: HistoryEvent.Reason?
    package var feedbackReason: FeedbackReason?
    package var tokenFingerprint: String? = nil

    package init(appId: String = "default", _ deviceId: String, _ kind: HistoryEvent.Kind, activityId: String? = nil,
         _ action: HistoryEvent.Action, reason: HistoryEvent.Reason? = nil, feedbackReason: FeedbackReason? = nil,
         fingerprint: String? = nil) {
        self.appId = appId
        self.deviceId = deviceId
        self.kind = kind
        self.activityId = activityId
        self.action = action
        self.reason = reason
        self.feedbackReason = feedbackReason
        self.tokenFingerprint = fingerprint
    }

    /// The shape of `event`; its fingerprint only when `withFingerprint`.
    package init(_ event: HistoryEvent, withFingerprint: Bool = false) {
        self.init(appId: event.appId, event.deviceId, event.kind, activityId: event.activityId, event.action,
                  reason: event.reason, feedbackReason: event.feedbackReason,
                  fingerprint: withFingerprint ? event.tokenFingerprint : nil)
    }

    package var description: String {
        "\(appId)/\(deviceId) \(kind)\(activityId.map { "(\($0))" } ?? "") \(action)"
            + (reason.map { " \($0)" } ?? "") + (feedbackReason.map { " \($0.rawValue)" } ?? "")
            + (tokenFingerprint.map { " \($0)" } ?? "")
    }
}

package extension RegistryStore {
    /// A user's whole history (newest first) as shapes without fingerprints.
    func historyShapes(_ user: String, limit: Int = 100) async throws -> [EventShape] {
        try await history(userId: user, limit: limit).map { EventShape($0) }
    }

    /// A push-to-start registration with an APNs test token.
    @discardableResult
    func registerPushToStart(_ user: String, _ device: String, token: Int, appId: String = "default",
                             environment: APNsEnvironment? = nil) async throws -> DeviceRecord {
        try await registerPushToStartToken(PushToStartRegistration(userId: user, deviceId: device, token: apnsToken(token),
                                                                   environment: environment, appId: appId))
    }

    /// An activity token registration with an APNs test token.
    @discardableResult
    func registerActivity(_ activity: String, _ user: String, _ device: String, token: Int, appId: String = "default",
                          environment: APNsEnvironment? = nil) async throws -> ActivityToken {
        try await registerActivityToken(ActivityTokenRegistration(activityId: activity, userId: user, deviceId: device,
                                                                  token: apnsToken(token), environment: environment,
                                                                  appId: appId))
    }

    /// A launch upsert of one app's record with a push token.
    @discardableResult
    func register(_ user: String, app: String, _ device: String, token: Int? = nil,
                  sequence: UInt64? = nil) async throws -> RegistrationOutcome {
        try await registerDevice(DeviceRegistration(userId: user, deviceId: device,
                                                    pushToken: token.map { .set(apnsToken($0)) } ?? .keep,
                                                    sequence: sequence, appId: app))
    }
}
