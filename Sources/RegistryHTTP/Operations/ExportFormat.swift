import JSON
import RegistryCore

/// The JSON Lines format of `registryd export` and `import`: one object per
/// line, `{"device": {…}}` with its tokens, `{"tombstone": {…}}`, or
/// `{"history": {…}}` (one token history event). Timestamps are epoch
/// milliseconds so a round trip is exact. `appId` is written only for an
/// app other than `default`, so a registry without app families exports the
/// very lines it did before, and those lines import unchanged. It holds
/// tokens in plaintext: treat an export like the data directory itself.
public enum ExportFormat {
    public static func encode(_ record: ExportedRecord) -> [UInt8] {
        switch record {
        case .device(let d, let activityTokens):
            let token: (StoredToken?) -> JSONWriter.Value = { t in
                guard let t else { return .null }
                return .object([("token", .string(t.token)), ("environment", .string(t.environment.rawValue)),
                                ("updatedAt", .int(t.updatedAt.milliseconds))])
            }
            return JSONWriter.encode(.object([("device", .object([
                ("userId", .string(d.userId))] + appMember(d.appId) + [("deviceId", .string(d.deviceId)),
                ("platform", .string(d.platform.rawValue)), ("environment", .string(d.environment.rawValue)),
                ("osVersion", d.osVersion.map { .string($0) } ?? .null),
                ("appVersion", d.appVersion.map { .string($0) } ?? .null),
                ("createdAt", .int(d.createdAt.milliseconds)), ("lastSeenAt", .int(d.lastSeenAt.milliseconds)),
                ("sequence", d.sequence.map { .uint($0) } ?? .null),
                ("pushToken", token(d.pushToken)), ("pushToStartToken", token(d.pushToStartToken)),
                ("activityTokens", .array(activityTokens.map { t in
                    .object([("activityId", .string(t.activityId)), ("token", .string(t.token)),
                             ("environment", .string(t.environment.rawValue)), ("updatedAt", .int(t.lastSeenAt.milliseconds))])
                })),
            ]))]))
        case .tombstone(let t):
            return JSONWriter.encode(.object([("tombstone", .object([
                ("userId", .string(t.userId))] + appMember(t.appId) + [("deviceId", .string(t.deviceId)),
                ("sequence", .uint(t.sequence)), ("deletedAt", .int(t.deletedAt.milliseconds)),
            ]))]))
        case .history(let e):
            return JSONWriter.encode(.object([("history", .object([
                ("userId", .string(e.userId)), ("appId", .string(e.appId)), ("deviceId", .string(e.deviceId)),
                ("at", .int(e.at.milliseconds)), ("kind", .string(e.kind.rawValue)),
                ("activityId", e.activityId.map { .string($0) } ?? .null), ("action", .string(e.action.rawValue)),
                ("reason", e.reason.map { .string($0.rawValue) } ?? .null),
                ("feedbackReason", e.feedbackReason.map { .string($0.rawValue) } ?? .null),
                ("tokenFingerprint", .string(e.tokenFingerprint)),
            ]))]))
        }
    }

    private static func appMember(_ appId: String) -> [(String, JSONWriter.Value)] {
        appId == Identifier.defaultAppId ? [] : [("appId", .string(appId))]
    }

    /// A line that import refuses: its number, the field, and why.
    public struct LineError: Error, CustomStringConvertible {
        public var line: Int
        public var field: String
        public var problem: String = "is missing or invalid"
        public var description: String { "line \(line): \(field) \(problem)" }
    }

    /// Parses one line and checks every field with the API's rules (ids,
    /// tokens for their platform, versions, times a response can spell), so
    /// an imported record is one the API itself could have written.
    public static func decode(_ bytes: [UInt8], line: Int) throws -> ExportedRecord {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw LineError(line: line, field: "record", problem: "is not JSON: \(error.message)")
        }
        guard case .object(let top) = value else { throw LineError(line: line, field: "record", problem: "is not a JSON object") }
        let fields = LineFields(line: line)
        if top["tombstone"] != nil {
            let t = try fields.object(top["tombstone"], "tombstone")
            guard let sequence = t["sequence"]?.exactUInt64 else { throw LineError(line: line, field: "sequence") }
            return .tombstone(Tombstone(userId: try fields.userId(t), deviceId: try fields.deviceId(t, "deviceId"),
                                        sequence: sequence, deletedAt: try fields.time(t, "deletedAt"),
                                        appId: try fields.appId(t)))
        }
        if top["history"] != nil {
            return .history(try fields.historyEvent(try fields.object(top["history"], "history")))
        }
        let d = try fields.object(top["device"], "device")
        guard let platform = Platform(rawValue: try fields.string(d, "platform")) else {
            throw LineError(line: line, field: "platform", problem: "must be 'apns' or 'fcm'")
        }
        var sequence: UInt64?
        if let s = d["sequence"], s != .null {
            guard let exact = s.exactUInt64 else { throw LineError(line: line, field: "sequence") }
            sequence = exact
        }
        let userId = try fields.userId(d), deviceId = try fields.deviceId(d, "deviceId"), appId = try fields.appId(d)
        var activityTokens: [ActivityToken] = []
        var activities = Set<[UInt8]>()
        if let items = d["activityTokens"], items != .null {
            guard case .array(let list) = items else { throw LineError(line: line, field: "activityTokens", problem: "must be an array") }
            for item in list {
                let t = try fields.object(item, "activityTokens")
                let activityId = try fields.deviceId(t, "activityId")
                guard activities.insert(Array(activityId.utf8)).inserted else {
                    throw LineError(line: line, field: "activityId", problem: "appears twice")
                }
                activityTokens.append(ActivityToken(activityId: activityId, userId: userId, deviceId: deviceId,
                                                    token: try fields.apnsToken(t, "token"),
                                                    environment: try fields.environment(t),
                                                    lastSeenAt: try fields.time(t, "updatedAt"), appId: appId))
            }
        }
        let record = DeviceRecord(
            userId: userId, deviceId: deviceId, platform: platform, environment: try fields.environment(d),
            osVersion: try fields.version(d, "osVersion"), appVersion: try fields.version(d, "appVersion"),
            pushToken: try fields.storedToken(d, "pushToken", platform: platform),
            pushToStartToken: try fields.storedToken(d, "pushToStartToken", platform: .apns),
            activityCount: activityTokens.count, createdAt: try fields.time(d, "createdAt"),
            lastSeenAt: try fields.time(d, "lastSeenAt"), sequence: sequence, appId: appId)
        return .device(record, activityTokens: activityTokens)
    }
}

/// Field readers for one export line; each failure is a `LineError` naming the field.
private struct LineFields {
    let line: Int

    func fail(_ field: String, _ problem: String = "is missing or invalid") -> ExportFormat.LineError {
        ExportFormat.LineError(line: line, field: field, problem: problem)
    }

    func object(_ v: JSONValue?, _ name: String) throws -> JSONObject {
        guard case .object(let o)? = v else { throw fail(name, "must be an object") }
        return o
    }

    func string(_ o: JSONObject, _ name: String) throws -> String {
        guard case .string(let s)? = o[name] else { throw fail(name, "must be a string") }
        return s
    }

    func userId(_ o: JSONObject) throws -> String {
        let id = try string(o, "userId")
        if let problem = Identifier.checkUserId(id) { throw fail("userId", problem.message) }
        return id
    }

    /// A `deviceId` or `activityId` (the same rule).
    func deviceId(_ o: JSONObject, _ name: String) throws -> String {
        let id = try string(o, name)
        if let problem = Identifier.checkDeviceId(id) { throw fail(name, problem.message) }
        return id
    }

    /// `appId`, `default` when absent.
    func appId(_ o: JSONObject) throws -> String {
        guard o["appId"] != nil, o["appId"] != .null else { return Identifier.defaultAppId }
        let id = try string(o, "appId")
        if let problem = Identifier.checkAppId(id) { throw fail("appId", problem.message) }
        return id
    }

    func historyEvent(_ o: JSONObject) throws -> HistoryEvent {
        func choice<E: RawRepresentable>(_ name: String, _ type: E.Type) throws -> E where E.RawValue == String {
            guard let value = E(rawValue: try string(o, name)) else { throw fail(name, "is not a known value") }
            return value
        }
        func optional<E: RawRepresentable>(_ name: String, _ type: E.Type) throws -> E? where E.RawValue == String {
            o[name] == nil || o[name] == .null ? nil : try choice(name, type)
        }
        let kind = try choice("kind", HistoryEvent.Kind.self)
        let action = try choice("action", HistoryEvent.Action.self)
        let reason = try optional("reason", HistoryEvent.Reason.self)
        let feedbackReason = try optional("feedbackReason", FeedbackReason.self)
        let activityId: String? = o["activityId"] == nil || o["activityId"] == .null ? nil : try deviceId(o, "activityId")
        guard (kind == .activity) == (activityId != nil) else { throw fail("activityId", "is set exactly for kind 'activity'") }
        guard (action == .removed) == (reason != nil) else { throw fail("reason", "is set exactly for action 'removed'") }
        guard feedbackReason == nil || reason == .feedback else { throw fail("feedbackReason", "is set only for reason 'feedback'") }
        let fingerprint = try string(o, "tokenFingerprint")
        guard fingerprint.utf8.count == 12, fingerprint.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else {
            throw fail("tokenFingerprint", "must be 12 lowercase hex digits")
        }
        return HistoryEvent(at: try time(o, "at"), userId: try userId(o), appId: try appId(o),
                            deviceId: try deviceId(o, "deviceId"), kind: kind, activityId: activityId, action: action,
                            reason: reason, feedbackReason: feedbackReason, tokenFingerprint: fingerprint)
    }

    func version(_ o: JSONObject, _ name: String) throws -> String? {
        if o[name] == nil || o[name] == .null { return nil }
        let text = try string(o, name)
        if let problem = Identifier.checkVersion(text) { throw fail(name, problem.message) }
        return text
    }

    func time(_ o: JSONObject, _ name: String) throws -> Timestamp {
        guard let ms = o[name]?.exactInt64 else { throw fail(name, "must be integer epoch milliseconds") }
        let time = Timestamp(milliseconds: ms)
        guard Timestamp.plausibleRange.contains(time) else { throw fail(name, "must be between 1970 and 9999") }
        return time
    }

    func environment(_ o: JSONObject) throws -> APNsEnvironment {
        guard let e = APNsEnvironment(rawValue: try string(o, "environment")) else {
            throw fail("environment", "must be 'production' or 'sandbox'")
        }
        return e
    }

    func apnsToken(_ o: JSONObject, _ name: String) throws -> String {
        switch Identifier.normalizeAPNsToken(try string(o, name)) {
        case .success(let token): return token
        case .failure(let problem): throw fail(name, problem.message)
        }
    }

    func storedToken(_ o: JSONObject, _ name: String, platform: Platform) throws -> StoredToken? {
        if o[name] == nil || o[name] == .null { return nil }
        let t = try object(o[name], name)
        let token: String
        switch Identifier.normalizePushToken(try string(t, "token"), platform: platform) {
        case .success(let normalized): token = normalized
        case .failure(let problem): throw fail("\(name).token", problem.message)
        }
        return StoredToken(token: token, environment: try environment(t), updatedAt: try time(t, "updatedAt"))
    }
}
