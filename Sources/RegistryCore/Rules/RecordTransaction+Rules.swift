import Codecs
/// The rules of docs/api.md, applied inside one command's transaction, the same
/// on every backend; a thrown `RegistryError` discards everything the
/// command wrote.
/// What a request's `sequence` does against the stored record and tombstone.
package enum SequenceVerdict { case apply, replay }

package extension RecordTransaction {
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
        let id = try recordID(r.userId, appId: r.appId, r.deviceId)
        let existing = try device(id)
        let platform = r.platform ?? existing?.platform ?? .apns
        var pushToken: String?
        if case .set(let raw) = r.pushToken {
            switch Identifier.normalizePushToken(raw, platform: platform) {
            case .success(let token): pushToken = token
            case .failure(let problem): throw RegistryError.invalidField(field: "pushToken", message: problem.message)
            }
        }
        let tombstone = try tombstone(id)
        if try verdict(r.sequence, stored: existing, tombstone: tombstone) == .replay, var replayed = existing {
            let previous = replayed
            replayed.lastSeenAt = now
            try save(id, replayed, previous: previous)
            return RegistrationOutcome(device: try join(id, replayed), created: false)
        }
        if let pushToken { try claim(pushToken, .push, id, activity: nil) }
        if existing == nil { try makeRoom(for: id, maxDevices: maxDevices) }
        let value = DeviceValue(
            platform: platform,
            environment: r.environment ?? existing?.environment ?? .production,
            osVersion: r.osVersion ?? existing?.osVersion,
            appVersion: r.appVersion ?? existing?.appVersion,
            createdAt: existing?.createdAt ?? now, lastSeenAt: now,
            sequence: r.sequence ?? existing?.sequence,
            activityCount: existing?.activityCount ?? 0)
        try save(id, value, previous: existing)
        switch r.pushToken {
        case .keep:
            if existing?.environment != value.environment, try token(.push, of: TokenHolder(id: id, activityId: nil)) != nil {
                try setTokenEnvironment(.push, of: TokenHolder(id: id, activityId: nil), value.environment)
            }
        case .remove:
            try removeToken(.push, id, reason: .permissionWithdrawn, feedback: nil)
        case .set:
            try putToken(.push, id, TokenValue(token: pushToken!, environment: value.environment, updatedAt: now))
        }
        return RegistrationOutcome(device: try join(id, value), created: existing == nil)
    }

    func registerPushToStart(_ r: PushToStartRegistration, maxDevices: Int) throws -> DeviceRecord {
        let token = try normalizedHex(r.token)
        let id = try recordID(r.userId, appId: r.appId, r.deviceId)
        let device = try touchDevice(id, sequence: r.sequence, maxDevices: maxDevices) {
            try claim(token, .pushToStart, id, activity: nil)
        }
        if device.replayed { return try join(id, device.value) }
        try putToken(.pushToStart, id, TokenValue(token: token, environment: r.environment ?? .production, updatedAt: now))
        return try join(id, device.value)
    }

    /// A device holds at most `maxActivities` activity tokens: a new activity
    /// past that evicts the device's least recently refreshed one.
    func registerActivityToken(_ r: ActivityTokenRegistration, maxDevices: Int, maxActivities: Int) throws -> ActivityToken {
        let token = try normalizedHex(r.token)
        let id = try recordID(r.userId, appId: r.appId, r.deviceId)
        let device = try touchDevice(id, sequence: r.sequence, maxDevices: maxDevices) {
            try claim(token, .activity, id, activity: r.activityId)
        }
        let holder = TokenHolder(id: id, activityId: r.activityId)
        if device.replayed {
            let stored = try self.token(.activity, of: holder)
            return ActivityToken(activityId: r.activityId, userId: r.userId, deviceId: r.deviceId,
                                 token: stored?.token ?? token, environment: stored?.environment ?? r.environment ?? .production,
                                 lastSeenAt: stored?.updatedAt ?? now, appId: r.appId)
        }
        if try self.token(.activity, of: holder) == nil {
            var count = try activities(id).count
            while count >= max(1, maxActivities), let oldest = try leastRecentActivity(id) {
                try removeActivityToken(oldest, id, reason: .activityCap, feedback: nil)
                count -= 1
            }
        }
        let value = TokenValue(token: token, environment: r.environment ?? .production, updatedAt: now)
        try putActivityToken(r.activityId, id, value)
        return ActivityToken(activityId: r.activityId, userId: r.userId, deviceId: r.deviceId, token: token,
                             environment: value.environment, lastSeenAt: now, appId: r.appId)
    }

    /// Sign-out: the device and all its tokens (O(activity cap)); with a
    /// sequence, a tombstone (at most `maxTombstones` per user). An app
    /// not declared takes no write: nothing is removed, no tombstone is left.
    func signOut(_ user: String, appId: String, _ device: String, sequence: UInt64?, maxTombstones: Int) throws {
        guard declaredApps.contains(appId) else { return }
        // An app never seen has no record; a sequenced sign-out still leaves its tombstone.
        let appKnown = try existingRecordID(user, appId: appId, device) != nil
        guard sequence != nil || appKnown else { return }
        let id = try recordID(user, appId: appId, device)
        _ = try verdict(sequence, stored: try self.device(id), tombstone: try tombstone(id), isDelete: true)
        try deleteDevice(id, reason: .signOut)
        if let sequence { try putTombstone(id, sequence: sequence, maxTombstones: maxTombstones) }
    }

    /// The push-to-start token `DELETE`: removes the device's token, if any
    /// (an app not declared takes no write).
    func removePushToStart(_ user: String, appId: String, _ device: String) throws {
        guard declaredApps.contains(appId), let id = try existingRecordID(user, appId: appId, device) else { return }
        try removeToken(.pushToStart, id, reason: .deleted, feedback: nil)
    }

    /// The activity-token `DELETE`: removes the device's token for
    /// `activity`, if any (an app not declared takes no write).
    func removeActivity(_ activity: String, _ user: String, appId: String, _ device: String) throws {
        guard declaredApps.contains(appId), let id = try existingRecordID(user, appId: appId, device) else { return }
        try removeActivityToken(activity, id, reason: .deleted, feedback: nil)
    }

    /// The environment correction: `token`'s environment set wherever it is
    /// held (matched as `eachHolder` says), each change with an
    /// `environmentCorrected` event. A device's push token takes its
    /// environment from the device, so the device value changes with it.
    func correctEnvironment(_ token: String, to environment: APNsEnvironment) throws -> Int {
        try eachHolder(of: token) { kind, owner, matched in
            guard let stored = try self.token(kind, of: owner), stored.environment != environment else { return false }
            try setTokenEnvironment(kind, of: owner, environment)
            if kind == .push, var device = try self.device(owner.id) {
                let previous = device
                device.environment = environment
                try save(owner.id, device, previous: previous)
            }
            try recordEvent(owner.id, kind, activity: owner.activityId, .environmentCorrected, reason: nil, feedback: nil,
                            token: matched)
            return true
        }
    }

    /// APNs feedback: `token` removed wherever held (matched as `eachHolder`
    /// says), optionally only when registered strictly before `before`.
    /// Returns how many were removed.
    func removeEverywhere(_ token: String, before: Timestamp?, feedback: FeedbackReason) throws -> Int {
        try eachHolder(of: token) { kind, owner, _ in
            if let before, let stored = try self.token(kind, of: owner), !(stored.updatedAt < before) {
                return false
            }
            switch kind {
            case .push, .pushToStart:
                return try removeToken(kind, owner.id, reason: .feedback, feedback: feedback)
            case .activity:
                return try removeActivityToken(owner.activityId ?? "", owner.id, reason: .feedback, feedback: feedback)
            }
        }
    }

    /// Runs `act` on every holder a token named by a sender reaches (APNs
    /// feedback, an environment correction), with the token as matched;
    /// returns how many times `act` said it changed something.
    ///
    /// The token as sent matches exactly everywhere. When no FCM device
    /// holds it exactly, its lowercase form (APNs tokens are stored
    /// lowercase) also matches what APNs holders have: push-to-start and
    /// activity tokens, and push tokens of `apns` devices. An FCM token is
    /// case-sensitive, so an uppercase FCM token never reaches an APNs token
    /// that happens to have the same letters, nor the reverse.
    private func eachHolder(of token: String,
                            _ act: (TokenKind, TokenHolder, _ matched: String) throws -> Bool) throws -> Int {
        let exact = try holders(of: token, apnsOnly: false, act)
        guard !exact.heldByFCM, case .success(let hex) = Identifier.normalizeAPNsToken(token),
              !hex.hasSameBytes(as: token) else { return exact.changed }
        return exact.changed + (try holders(of: hex, apnsOnly: true, act).changed)
    }

    private func holders(of token: String, apnsOnly: Bool,
                         _ act: (TokenKind, TokenHolder, String) throws -> Bool) throws -> (changed: Int, heldByFCM: Bool) {
        var changed = 0
        var heldByFCM = false
        for kind in TokenKind.allCases {
            guard let owner = try owner(of: token, kind) else { continue }
            if kind == .push, try device(owner.id)?.platform == .fcm {
                heldByFCM = true
                if apnsOnly { continue }
            }
            if try act(kind, owner, token) { changed += 1 }
        }
        return (changed, heldByFCM)
    }

    // MARK: Rule helpers

    /// Sequence check, then `claimToken`, then create-or-refresh the device
    /// (push-to-start and activity registrations create it when missing).
    private func touchDevice(_ id: RecordID, sequence: UInt64?, maxDevices: Int,
                             claimToken: () throws -> Void) throws -> (value: DeviceValue, replayed: Bool) {
        let verdict = try verdict(sequence, stored: try device(id), tombstone: try tombstone(id))
        if verdict == .apply { try claimToken() }
        // Read after the claim: moving an activity token off this very device changed its count.
        let existing = try device(id)
        if existing == nil { try makeRoom(for: id, maxDevices: maxDevices) }
        var value = existing ?? DeviceValue(platform: .apns, environment: .production, osVersion: nil, appVersion: nil,
                                            createdAt: now, lastSeenAt: now, sequence: nil)
        value.lastSeenAt = now
        if verdict == .apply, let sequence { value.sequence = sequence }
        try save(id, value, previous: existing)
        return (value, verdict == .replay && existing != nil)
    }

    /// One owner per token (across users and apps): a holder other than
    /// this record (and activity) loses it. For push and push-to-start
    /// tokens that holder's whole record goes (a reinstall made a new id, or
    /// the account switched); for an activity token only that activity entry
    /// goes. The loser's history says `movedToDevice` when it is the same
    /// user, `movedToUser` otherwise (never naming the new holder).
    private func claim(_ token: String, _ kind: TokenKind, _ id: RecordID, activity: String?) throws {
        guard let owner = try owner(of: token, kind) else { return }
        // Compared as bytes: `String ==` would call canonically equivalent ids the same holder.
        guard !owner.isHolder(id, activity: activity) else { return }
        let reason: HistoryEvent.Reason = owner.id.user.hasSameBytes(as: id.user) ? .movedToDevice : .movedToUser
        switch kind {
        case .push, .pushToStart:
            try deleteDevice(owner.id, reason: reason)
        case .activity:
            try removeActivityToken(owner.activityId ?? "", owner.id, reason: reason, feedback: nil)
        }
    }

    /// The device cap, per (user, app): evicts least recently seen devices
    /// (with their tokens) until one more fits.
    private func makeRoom(for id: RecordID, maxDevices: Int) throws {
        var devices = try deviceValues(of: id.user, app: id.app)
        guard devices.count >= maxDevices else { return }
        devices.sort { a, b in
            a.1.lastSeenAt != b.1.lastSeenAt ? a.1.lastSeenAt < b.1.lastSeenAt
                : a.0.device.utf8.lexicographicallyPrecedes(b.0.device.utf8)
        }
        for (evicted, _) in devices.prefix(devices.count - maxDevices + 1) {
            try deleteDevice(evicted, reason: .deviceCap)
        }
    }

    /// The device's least recently refreshed activity (ties by activity id
    /// bytes): the one the activity cap evicts. O(cap).
    private func leastRecentActivity(_ id: RecordID) throws -> String? {
        var oldest: (activity: String, at: Timestamp)?
        for activity in try activities(id) {
            guard let token = try token(.activity, of: TokenHolder(id: id, activityId: activity)) else { continue }
            if let current = oldest,
               current.at < token.updatedAt
                || (current.at == token.updatedAt && !activity.utf8.lexicographicallyPrecedes(current.activity.utf8)) {
                continue
            }
            oldest = (activity, token.updatedAt)
        }
        return oldest?.activity
    }

    private func normalizedHex(_ token: String) throws(RegistryError) -> String {
        switch Identifier.normalizeAPNsToken(token) {
        case .success(let hex): return hex
        case .failure(let problem): throw .invalidField(field: "token", message: problem.message)
        }
    }
}
