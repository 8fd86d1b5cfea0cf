extension DeliveryTarget {
    /// The token this target's holder has now, read inside a write
    /// transaction of either engine; `nil` when the device signed out or the
    /// token was removed since the notification was accepted.
    package func currentToken(in txn: some RecordTransaction) throws -> TokenValue? {
        guard let id = try txn.existingRecordID(userId, appId: appId, deviceId) else { return nil }
        return try txn.token(tokenKind, of: TokenHolder(id: id, activityId: activityId))
    }
}
