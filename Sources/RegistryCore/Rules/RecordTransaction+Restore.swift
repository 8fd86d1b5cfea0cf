/// Import (`registryd import`, a move between backends): exported records
/// put back as they are, on every backend the same way.
package extension RecordTransaction {
    /// Puts one exported record back with all its index entries, replacing a
    /// record with the same ids (timestamps kept). A token already held
    /// elsewhere moves to the imported record (the one-owner rule). A
    /// history event is the `occurrence`th of its identical events in the
    /// import.
    func restore(_ record: ExportedRecord, occurrence: Int = 1) throws {
        switch record {
        case .device(let d, let activityTokens):
            let id = try recordID(d.userId, appId: d.appId, d.deviceId)
            if try device(id) != nil { try deleteDevice(id, reason: .deleted) }
            for (kind, token) in [(TokenKind.push, d.pushToken), (.pushToStart, d.pushToStartToken)] {
                if let token, let owner = try owner(of: token.token, kind), !owner.isHolder(id, activity: nil) {
                    try deleteDevice(owner.id, reason: .deleted)
                }
            }
            let value = DeviceValue(platform: d.platform, environment: d.environment, osVersion: d.osVersion,
                                    appVersion: d.appVersion, createdAt: d.createdAt, lastSeenAt: d.lastSeenAt,
                                    sequence: d.sequence)
            try save(id, value, previous: nil)
            if let push = d.pushToken {
                try putToken(.push, id, TokenValue(token: push.token, environment: d.environment, updatedAt: push.updatedAt))
            }
            if let start = d.pushToStartToken {
                try putToken(.pushToStart, id,
                             TokenValue(token: start.token, environment: start.environment, updatedAt: start.updatedAt))
            }
            for t in activityTokens {
                if let owner = try owner(of: t.token, .activity) {
                    try removeActivityToken(owner.activityId ?? "", owner.id, reason: .deleted, feedback: nil)
                }
                try putActivityToken(t.activityId, id,
                                     TokenValue(token: t.token, environment: t.environment, updatedAt: t.lastSeenAt))
            }
        case .tombstone(let t):
            try restoreTombstone(t)
        case .history(let event):
            try restoreHistory(event, occurrence: occurrence)
        }
    }

    /// One import batch (`ImportBatches`), put back without history events
    /// of its own; returns how many records it held.
    func restoreQuietly(_ chunk: [(ExportedRecord, Int)]) throws -> Int {
        var quiet = self
        quiet.restoring = true
        for (record, occurrence) in chunk { try quiet.restore(record, occurrence: occurrence) }
        return chunk.count
    }
}
