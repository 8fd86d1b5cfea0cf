/// One record of `registryd export` / `import`: a device with every token
/// it holds (timestamps kept exactly), or a sign-out tombstone.
public enum ExportedRecord: Hashable, Sendable {
    case device(DeviceRecord, activityTokens: [ActivityToken])
    case tombstone(Tombstone)
    case history(HistoryEvent)
}

/// A sign-out that carried a sequence, kept until the device TTL passes so a
/// delayed registration with a lower sequence cannot bring the device back.
public struct Tombstone: Hashable, Sendable {
    public var userId: String
    public var appId: String
    public var deviceId: String
    public var sequence: UInt64
    public var deletedAt: Timestamp

    public init(userId: String, deviceId: String, sequence: UInt64, deletedAt: Timestamp,
                appId: String = Identifier.defaultAppId) {
        self.userId = userId
        self.appId = appId
        self.deviceId = deviceId
        self.sequence = sequence
        self.deletedAt = deletedAt
    }
}
