/// One record of `registryd export` / `import`: a device with every token
/// it holds (timestamps kept exactly), or a sign-out tombstone.
public enum ExportedRecord: Hashable, Sendable {
    case device(DeviceRecord, activityTokens: [ActivityToken])
    case tombstone(userId: String, deviceId: String, sequence: UInt64, deletedAt: Timestamp)
}
