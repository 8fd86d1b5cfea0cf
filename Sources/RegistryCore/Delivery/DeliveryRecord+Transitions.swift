/// The registry's own reasons (APNs' are its `reason` strings).
public enum DeliveryReason {
    /// The holder signed out, or its token was removed, before the delivery was sent.
    public static let tokenRemoved = "token_removed"
    /// No provider of the token's platform holds credentials for the app
    /// (decided when the notification is accepted, or when claimed after a
    /// restart without them).
    public static let platformNotConfigured = "platform_not_configured"
    /// The request gave no body for the token's platform (`payload` for
    /// APNs, `fcm` for FCM).
    public static let noPayloadForPlatform = "no_payload_for_platform"
    /// The notification's app has no APNs topic any more (the sender was restarted without it).
    public static let topicNotConfigured = "topic_not_configured"
    /// The holder's token is now of another platform than the delivery was
    /// accepted for (the device re-registered with an FCM token, or back):
    /// it is never sent through the other provider.
    public static let tokenChanged = "token_changed"
    /// Claimed by a sender that stopped (or died) before it knew the outcome.
    public static let senderStopped = "sender_stopped"
}

extension DeliveryRecord {
    /// A due `queued` delivery taken off the queue inside the claiming write
    /// transaction `txn`, every engine the same way: of a cancelled
    /// notification it is `cancelled`; past the expiration it is
    /// `expired`; with its holder's token as it is now it is `sending` (the
    /// token's environment and fingerprint may have changed since it was
    /// accepted); without one, `failed` (`token_removed`); with one of
    /// another platform, `failed` (`token_changed`). Returns the token to
    /// send to, `nil` when it is not sent.
    package mutating func takeFromQueue(_ notification: NotificationRecord, in txn: some RecordTransaction,
                                        now: Timestamp) throws -> TokenValue? {
        updatedAt = now
        if notification.cancelled {
            // Re-queued by a settlement that raced the cancel (PostgreSQL: another node's).
            state = .cancelled
            return nil
        }
        if now > notification.expiration {
            state = .expired
            return nil
        }
        guard let (token, platform) = try target.currentToken(in: txn) else {
            state = .failed
            reason = DeliveryReason.tokenRemoved
            return nil
        }
        guard platform == self.platform else {
            state = .failed
            reason = DeliveryReason.tokenChanged
            return nil
        }
        state = .sending
        claimedAt = now
        environment = token.environment
        tokenFingerprint = HistoryEvent.fingerprint(of: token.token)
        return token
    }

    /// Applies a sender's settlement to a `sending` delivery (every engine
    /// the same way). A retry of a cancelled notification is `cancelled`
    /// instead: cancel means no request starts after it.
    package mutating func settle(_ settlement: DeliverySettlement, cancelled: Bool, now: Timestamp) {
        state = cancelled && settlement.state == .queued ? .cancelled : settlement.state
        status = settlement.status
        reason = settlement.reason
        environment = settlement.environment
        attempts += settlement.requests
        if settlement.retried { retries += 1 }
        tokenFingerprint = settlement.tokenFingerprint
        if let messageId = settlement.messageId { self.messageId = messageId }
        if let uniqueId = settlement.apnsUniqueId { apnsUniqueId = uniqueId }
        updatedAt = now
        claimedAt = nil
        if state == .queued, let notBefore = settlement.notBefore { self.notBefore = notBefore }
    }

    /// A claim nobody will settle: its outcome is unknown, and it is never sent again.
    package mutating func abandon(now: Timestamp) {
        state = .unknown
        reason = DeliveryReason.senderStopped
        updatedAt = now
        claimedAt = nil
    }
}
