import LMDB

/// The rules of API.md, applied inside one command's nested transaction;
/// a thrown `RegistryError` discards everything the command wrote.
extension RecordWriter {
    /// What a request's `sequence` does against the stored record and tombstone.
    enum SequenceVerdict { case apply, replay }

    func verdict(_ incoming: UInt64?, stored: DeviceValue?, tombstone: TombstoneValue?,
                 isDelete: Bool = false) throws(RegistryError) -> SequenceVerdict {
        guard let incoming else { return .apply }
        if let tombstone, tombstone.sequence >= incoming { throw .staleWrite }
        if let storedSequence = stored?.sequence {
            if storedSequence > incoming { throw .staleWrite }
            if storedSequence == incoming && !isDelete { return .replay }
        }
        return .apply
    }

    /// The launch upsert. The push token's format is checked first, against
    /// the platform the record will have, so a replay cannot smuggle a
    /// malformed token past the sequence verdict.
    func registerDevice(_ r: DeviceRegistration, maxDevices: Int) throws -> RegistrationOutcome {
        let existing = try read.device(r.userId, r.deviceId)
        let platform = r.platform ?? existing?.platform ?? .apns
        var pushToken: String?
        if case .set(let raw) = r.pushToken {
            switch Identifier.normalizePushToken(raw, platform: platform) {
            case .success(let token): pushToken = token
            case .failure(let problem): throw RegistryError.invalidField(field: "pushToken", message: problem.message)
            }
        }
        let tombstone = try read.tombstone(r.userId, r.deviceId)
        if try verdict(r.sequence, stored: existing, tombstone: tombstone) == .replay, var replayed = existing {
            let previous = replayed
            replayed.lastSeenAt = now
            try save(r.userId, r.deviceId, replayed, previous: previous)
            return RegistrationOutcome(device: try read.join(r.userId, r.deviceId, replayed), created: false)
        }
        if let pushToken { try claim(pushToken, .push, user: r.userId, device: r.deviceId, activity: nil) }
        if existing == nil { try makeRoom(for: r.userId, maxDevices: maxDevices) }
        let value = DeviceValue(
            platform: platform,
            environment: r.environment ?? existing?.environment ?? .production,
            osVersion: r.osVersion ?? existing?.osVersion,
            appVersion: r.appVersion ?? existing?.appVersion,
            createdAt: existing?.createdAt ?? now, lastSeenAt: now,
            sequence: r.sequence ?? existing?.sequence,
            activityCount: existing?.activityCount ?? 0)
        try save(r.userId, r.deviceId, value, previous: existing)
        let key = StoreKey.device(r.userId, r.deviceId)
        switch r.pushToken {
        case .keep:
            if existing?.environment != value.environment, var token = try read.token(.push, key) {
                token.environment = value.environment
                try txn.put(token.encoded(), for: key, in: schema.pushTokens)
            }
        case .remove:
            try removeToken(.push, key)
        case .set:
            try putToken(.push, user: r.userId, device: r.deviceId,
                         TokenValue(token: pushToken!, environment: value.environment, updatedAt: now))
        }
        return RegistrationOutcome(device: try read.join(r.userId, r.deviceId, value), created: existing == nil)
    }

    func registerPushToStart(_ r: PushToStartRegistration, maxDevices: Int) throws -> DeviceRecord {
        let token = try normalizedHex(r.token)
        let device = try touchDevice(r.userId, r.deviceId, sequence: r.sequence, maxDevices: maxDevices) {
            try claim(token, .pushToStart, user: r.userId, device: r.deviceId, activity: nil)
        }
        if device.replayed { return try read.join(r.userId, r.deviceId, device.value) }
        try putToken(.pushToStart, user: r.userId, device: r.deviceId,
                     TokenValue(token: token, environment: r.environment ?? .production, updatedAt: now))
        return try read.join(r.userId, r.deviceId, device.value)
    }

    /// A device holds at most `maxActivities` activity tokens: a new activity
    /// past that evicts the device's least recently refreshed one.
    func registerActivityToken(_ r: ActivityTokenRegistration, maxDevices: Int, maxActivities: Int) throws -> ActivityToken {
        let token = try normalizedHex(r.token)
        let device = try touchDevice(r.userId, r.deviceId, sequence: r.sequence, maxDevices: maxDevices) {
            try claim(token, .activity, user: r.userId, device: r.deviceId, activity: r.activityId)
        }
        let key = StoreKey.activityToken(r.activityId, r.userId, r.deviceId)
        if device.replayed {
            let stored = try read.token(.activity, key)
            return ActivityToken(activityId: r.activityId, userId: r.userId, deviceId: r.deviceId,
                                 token: stored?.token ?? token, environment: stored?.environment ?? r.environment ?? .production,
                                 lastSeenAt: stored?.updatedAt ?? now)
        }
        if try read.token(.activity, key) == nil {
            var count = device.value.activityCount
            while count >= max(1, maxActivities), let oldest = try read.leastRecentActivity(r.userId, r.deviceId) {
                try removeActivityToken(oldest, r.userId, r.deviceId)
                count -= 1
            }
        }
        let value = TokenValue(token: token, environment: r.environment ?? .production, updatedAt: now)
        try putActivityToken(r.activityId, user: r.userId, device: r.deviceId, value)
        return ActivityToken(activityId: r.activityId, userId: r.userId, deviceId: r.deviceId, token: token,
                             environment: value.environment, lastSeenAt: now)
    }

    /// Sign-out: the device and all its tokens (O(activity cap)); with a
    /// sequence, a tombstone (at most `maxTombstones` per user).
    func signOut(_ user: String, _ device: String, sequence: UInt64?, maxTombstones: Int) throws {
        let existing = try read.device(user, device)
        _ = try verdict(sequence, stored: existing, tombstone: try read.tombstone(user, device), isDelete: true)
        try deleteDevice(user, device)
        if let sequence { try putTombstone(user, device, sequence: sequence, maxTombstones: maxTombstones) }
    }

    /// APNs feedback: `token` removed wherever held, optionally only when
    /// registered strictly before `before`. Returns how many were removed.
    ///
    /// The token as sent matches exactly everywhere. When no FCM device
    /// holds it exactly, its lowercase form (APNs tokens are stored
    /// lowercase) also matches what APNs holders have: push-to-start and
    /// activity tokens, and push tokens of `apns` devices. An FCM token is
    /// case-sensitive, so feedback for an uppercase FCM token never removes
    /// an APNs token that happens to have the same letters.
    func removeEverywhere(_ token: String, before: Timestamp?) throws -> Int {
        let exact = try removeHeld(token, before: before, apnsOnly: false)
        guard !exact.heldByFCM, case .success(let hex) = Identifier.normalizeAPNsToken(token),
              !hex.utf8.elementsEqual(token.utf8) else { return exact.removed }
        return exact.removed + (try removeHeld(hex, before: before, apnsOnly: true).removed)
    }

    private func removeHeld(_ token: String, before: Timestamp?, apnsOnly: Bool) throws -> (removed: Int, heldByFCM: Bool) {
        var removed = 0
        var heldByFCM = false
        for kind in TokenKind.allCases {
            guard let owner = try read.owner(of: token, kind) else { continue }
            if kind == .push, try read.device(owner.userId, owner.deviceId)?.platform == .fcm {
                heldByFCM = true
                if apnsOnly { continue }
            }
            let key = read.tokenKey(kind, owner)
            if let before, let stored = try read.token(kind, key), !(stored.updatedAt < before) { continue }
            switch kind {
            case .push, .pushToStart:
                if try removeToken(kind, key) { removed += 1 }
            case .activity:
                if try removeActivityToken(owner.activityId ?? "", owner.userId, owner.deviceId) { removed += 1 }
            }
        }
        return (removed, heldByFCM)
    }

    // MARK: Rule helpers

    /// Sequence check, then `claimToken`, then create-or-refresh the device
    /// (push-to-start and activity registrations create it when missing).
    private func touchDevice(_ user: String, _ device: String, sequence: UInt64?, maxDevices: Int,
                             claimToken: () throws -> Void) throws -> (value: DeviceValue, replayed: Bool) {
        let verdict = try verdict(sequence, stored: try read.device(user, device), tombstone: try read.tombstone(user, device))
        if verdict == .apply { try claimToken() }
        // Read after the claim: moving an activity token off this very device changed its count.
        let existing = try read.device(user, device)
        if existing == nil { try makeRoom(for: user, maxDevices: maxDevices) }
        var value = existing ?? DeviceValue(platform: .apns, environment: .production, osVersion: nil, appVersion: nil,
                                            createdAt: now, lastSeenAt: now, sequence: nil)
        value.lastSeenAt = now
        if verdict == .apply, let sequence { value.sequence = sequence }
        try save(user, device, value, previous: existing)
        return (value, verdict == .replay && existing != nil)
    }

    /// One owner per token: a holder other than this (user, device[, activity])
    /// loses it. For push and push-to-start tokens that holder's whole record
    /// goes (a reinstall made a new id, or the account switched); for an
    /// activity token only that activity entry goes.
    private func claim(_ token: String, _ kind: TokenKind, user: String, device: String, activity: String?) throws {
        guard let owner = try read.owner(of: token, kind) else { return }
        // Compared as key bytes: `String ==` would call canonically equivalent ids the same holder.
        let claimant = activity.map { StoreKey.activityToken($0, user, device) } ?? StoreKey.device(user, device)
        guard read.tokenKey(kind, owner) != claimant else { return }
        switch kind {
        case .push, .pushToStart:
            try deleteDevice(owner.userId, owner.deviceId)
        case .activity:
            try removeActivityToken(owner.activityId ?? "", owner.userId, owner.deviceId)
        }
    }

    /// The device cap: evicts least recently seen devices (with their tokens)
    /// until one more fits.
    private func makeRoom(for user: String, maxDevices: Int) throws {
        var devices = try read.deviceValues(of: user)
        guard devices.count >= maxDevices else { return }
        devices.sort { a, b in
            a.1.lastSeenAt != b.1.lastSeenAt ? a.1.lastSeenAt < b.1.lastSeenAt : a.0.utf8.lexicographicallyPrecedes(b.0.utf8)
        }
        for (deviceId, _) in devices.prefix(devices.count - maxDevices + 1) {
            try deleteDevice(user, deviceId)
        }
    }

    private func normalizedHex(_ token: String) throws(RegistryError) -> String {
        switch Identifier.normalizeAPNsToken(token) {
        case .success(let hex): return hex
        case .failure(let problem): throw .invalidField(field: "token", message: problem.message)
        }
    }
}
