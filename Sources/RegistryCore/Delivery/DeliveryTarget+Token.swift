extension DeliveryTarget {
    /// The token this target's holder has now, with its platform, read
    /// inside a write transaction of either engine; `nil` when the device
    /// signed out or the token was removed since the notification was
    /// accepted. A push token is of its device's platform; push-to-start
    /// and activity tokens are APNs'.
    package func currentToken(in txn: some RecordTransaction) throws -> (TokenValue, Platform)? {
        guard let id = try txn.existingRecordID(userId, appId: appId, deviceId),
              let token = try txn.token(tokenKind, of: TokenHolder(id: id, activityId: activityId)) else { return nil }
        guard kind == .push else { return (token, .apns) }
        guard let device = try txn.device(id) else { return nil }
        return (token, device.platform)
    }
}
