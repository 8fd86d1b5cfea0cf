/// An engine whose writes are transactions of the shared rules
/// (`RecordTransaction+Rules`): it provides one way to run a transaction,
/// and every write of the contract is written here once, over it.
package protocol RuleStore: RegistryMaintenance {
    associatedtype Transaction: RecordTransaction

    var limits: RegistryLimits { get }

    /// Runs `body` in one write transaction and returns its value once the
    /// transaction is durable. `user` names the user whose records the
    /// write may change (an engine that serialises a user's writes uses
    /// it); `nil` for writes that reach any user's records (feedback,
    /// environment corrections, import). `record` names the record whose
    /// device the rules read first, when the write knows it: an engine
    /// whose reads are round trips may read it ahead, with the
    /// transaction's first statements (`RecordTransaction.device`).
    func writing<T: Sendable>(user: String?, reading record: RecordID?,
                              _ body: @escaping @Sendable (Transaction) throws -> T) async throws -> T
}

package extension RuleStore {
    public func registerDevice(_ registration: DeviceRegistration) async throws -> RegistrationOutcome {
        let max = limits.maxDevicesPerUser
        return try await writing(user: registration.userId, reading: registration.recordID) {
            try $0.registerDevice(registration, maxDevices: max)
        }
    }

    public func signOut(userId: String, appId: String, deviceId: String, sequence: UInt64?) async throws {
        let maxTombstones = limits.maxTombstonesPerUser
        try await writing(user: userId, reading: RecordID(user: userId, app: appId, device: deviceId)) {
            try $0.signOut(userId, appId: appId, deviceId, sequence: sequence, maxTombstones: maxTombstones)
        }
    }

    public func registerPushToStartToken(_ registration: PushToStartRegistration) async throws -> DeviceRecord {
        let max = limits.maxDevicesPerUser
        return try await writing(user: registration.userId, reading: registration.recordID) {
            try $0.registerPushToStart(registration, maxDevices: max)
        }
    }

    public func removePushToStartToken(userId: String, appId: String, deviceId: String) async throws {
        try await writing(user: userId, reading: nil) { try $0.removePushToStart(userId, appId: appId, deviceId) }
    }

    public func registerActivityToken(_ registration: ActivityTokenRegistration) async throws -> ActivityToken {
        let maxDevices = limits.maxDevicesPerUser, maxActivities = limits.maxActivitiesPerDevice
        return try await writing(user: registration.userId, reading: registration.recordID) {
            try $0.registerActivityToken(registration, maxDevices: maxDevices, maxActivities: maxActivities)
        }
    }

    public func removeActivityToken(activityId: String, userId: String, appId: String, deviceId: String) async throws {
        try await writing(user: userId, reading: nil) { try $0.removeActivity(activityId, userId, appId: appId, deviceId) }
    }

    public func removeToken(_ token: String, reason: FeedbackReason, registeredBefore before: Timestamp?) async throws -> Int {
        try await writing(user: nil, reading: nil) { try $0.removeEverywhere(token, before: before, feedback: reason) }
    }

    public func correctEnvironment(token: String, environment: APNsEnvironment) async throws -> Int {
        try await writing(user: nil, reading: nil) { try $0.correctEnvironment(token, to: environment) }
    }

    public func importRecords(_ records: [ExportedRecord]) async throws -> Int {
        try await ImportBatches.write(records) { chunk in
            try await writing(user: nil, reading: nil) { try $0.restoreQuietly(chunk) }
        }
    }

    public var declaredApps: DeclaredApps { limits.apps }
}

private extension DeviceRegistration {
    var recordID: RecordID { RecordID(user: userId, app: appId, device: deviceId) }
}

private extension PushToStartRegistration {
    var recordID: RecordID { RecordID(user: userId, app: appId, device: deviceId) }
}

private extension ActivityTokenRegistration {
    var recordID: RecordID { RecordID(user: userId, app: appId, device: deviceId) }
}
