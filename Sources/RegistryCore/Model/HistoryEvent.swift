import Crypto
import Codecs

/// One entry of a user's token history (docs/api.md "Token history"): what
/// happened to one token of one of the user's records, and why, so an
/// operator can answer "why did this user stop getting pushes?".
///
/// It never holds the token, only `tokenFingerprint`; and a token that moved
/// to another user is `movedToUser` without naming that user.
public struct HistoryEvent: Hashable, Sendable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case push
        case pushToStart
        case activity
    }

    public enum Action: String, Sendable, Hashable, CaseIterable {
        /// A token the record did not hold before.
        case registered
        /// A token that replaced another one on the record.
        case rotated
        case removed
        case environmentCorrected
    }

    /// Why a token was removed.
    public enum Reason: String, Sendable, Hashable, CaseIterable {
        case signOut
        /// `pushToken: null`: the user withdrew notification permission.
        case permissionWithdrawn
        /// A token `DELETE` route.
        case deleted
        case feedback
        /// The one-owner rule: the same user registered it on another device.
        case movedToDevice
        /// The one-owner rule: another user registered it (never named).
        case movedToUser
        case deviceCap
        case activityCap
        case expired
    }

    public var at: Timestamp
    public var userId: String
    public var appId: String
    public var deviceId: String
    public var kind: Kind
    /// Set exactly when `kind` is `activity`.
    public var activityId: String?
    public var action: Action
    /// Set exactly when `action` is `removed`.
    public var reason: Reason?
    /// The APNs reason, when `reason` is `feedback`.
    public var feedbackReason: FeedbackReason?
    /// The first 12 hex digits of SHA-256 of the token's text (`fingerprint(of:)`).
    public var tokenFingerprint: String

    public init(at: Timestamp, userId: String, appId: String, deviceId: String, kind: Kind, activityId: String?,
                action: Action, reason: Reason?, feedbackReason: FeedbackReason?, tokenFingerprint: String) {
        self.at = at
        self.userId = userId
        self.appId = appId
        self.deviceId = deviceId
        self.kind = kind
        self.activityId = activityId
        self.action = action
        self.reason = reason
        self.feedbackReason = feedbackReason
        self.tokenFingerprint = tokenFingerprint
    }

    /// How many events one user keeps; a new one past this drops the oldest.
    public static let maxPerUser = 100

    /// The token's fingerprint: 12 lowercase hex digits of SHA-256 of its
    /// text as the sender view carries it, so an operator can match it
    /// against the sender's logs without the registry disclosing the token.
    public static func fingerprint(of token: String) -> String {
        String(Hex.encode(SHA256.hash(Array(token.utf8))).prefix(12))
    }
}

extension HistoryEvent.Kind {
    /// The event kind of a token of `kind`.
    package init(_ kind: TokenKind) {
        switch kind {
        case .push: self = .push
        case .pushToStart: self = .pushToStart
        case .activity: self = .activity
        }
    }
}
