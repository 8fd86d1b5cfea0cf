import Postgres

/// The `RegistryStore` operations: each one transaction applying the shared
/// rules (`RecordTransaction+Rules`).
extension PostgresRegistryStore {
    public func registerDevice(_ registration: DeviceRegistration) async throws -> RegistrationOutcome {
        let max = configuration.maxDevicesPerUser
        return try await writing(user: registration.userId) { try $0.registerDevice(registration, maxDevices: max) }
    }

    public func signOut(userId: String, appId: String, deviceId: String, sequence: UInt64?) async throws {
        let maxTombstones = configuration.maxTombstonesPerUser
        try await writing(user: userId) {
            try $0.signOut(userId, appId: appId, deviceId, sequence: sequence, maxTombstones: maxTombstones)
        }
    }

    public func registerPushToStartToken(_ registration: PushToStartRegistration) async throws -> DeviceRecord {
        let max = configuration.maxDevicesPerUser
        return try await writing(user: registration.userId) { try $0.registerPushToStart(registration, maxDevices: max) }
    }

    public func removePushToStartToken(userId: String, appId: String, deviceId: String) async throws {
        try await writing(user: userId) { try $0.removePushToStart(userId, appId: appId, deviceId) }
    }

    public func registerActivityToken(_ registration: ActivityTokenRegistration) async throws -> ActivityToken {
        let maxDevices = configuration.maxDevicesPerUser, maxActivities = configuration.maxActivitiesPerDevice
        return try await writing(user: registration.userId) {
            try $0.registerActivityToken(registration, maxDevices: maxDevices, maxActivities: maxActivities)
        }
    }

    public func removeActivityToken(activityId: String, userId: String, appId: String, deviceId: String) async throws {
        try await writing(user: userId) { try $0.removeActivity(activityId, userId, appId: appId, deviceId) }
    }

    public func removeToken(_ token: String, reason: FeedbackReason, registeredBefore before: Timestamp?) async throws -> Int {
        try await writing { try $0.removeEverywhere(token, before: before, feedback: reason) }
    }

    public func correctEnvironment(token: String, environment: APNsEnvironment) async throws -> Int {
        try await writing { try $0.correctEnvironment(token, to: environment) }
    }

    // MARK: Sweep

    /// Deletes what expired in transactions of at most `sweepBatchSize`
    /// records each (devices with their tokens, then tombstones, activity
    /// tokens, history), under the sweep's advisory lock: while one node
    /// sweeps, another node's sweep finds the lock taken and returns zero
    /// counts at once. A dry run counts without the lock. Cancellation is
    /// checked between two transactions.
    public func sweep(dryRun: Bool) async throws -> SweepCounts {
        let plan = PostgresSweep(now: now, deviceTTL: configuration.deviceTTL, activityTTL: configuration.activityTTL,
                                 batchSize: configuration.sweepBatchSize, onBatch: configuration.onSweepBatch)
        if dryRun {
            return try await translatingErrors { try await pool.withConnection { try plan.count($0) } }
        }
        let cancelled = CancelFlag()
        let keys = sealingKeys, apps = self.apps, clock = configuration.clock
        let counts = try await withTaskCancellationHandler {
            try await translatingErrors {
                try await pool.withAdvisoryLock(locks.sweep) { connection in
                    try plan.run(connection, cancelled: cancelled) {
                        PostgresRecordWriter(connection: connection, vault: keys.current, apps: apps, now: clock.now())
                    }
                }
            }
        } onCancel: {
            cancelled.set()
        }
        if cancelled.isSet { throw CancellationError() }
        return counts ?? SweepCounts()
    }
}
