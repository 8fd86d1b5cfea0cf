import JSON
import Registry

/// The JSON Lines format of `registryd export` and `import`: one object per
/// line, `{"device": {…}}` with its tokens, or `{"tombstone": {…}}`.
/// Timestamps are epoch milliseconds so a round trip is exact. It holds
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
                ("userId", .string(d.userId)), ("deviceId", .string(d.deviceId)),
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
        case .tombstone(let user, let device, let sequence, let deletedAt):
            return JSONWriter.encode(.object([("tombstone", .object([
                ("userId", .string(user)), ("deviceId", .string(device)),
                ("sequence", .uint(sequence)), ("deletedAt", .int(deletedAt.milliseconds)),
            ]))]))
        }
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
            return .tombstone(userId: try fields.userId(t), deviceId: try fields.deviceId(t, "deviceId"),
                              sequence: sequence, deletedAt: try fields.time(t, "deletedAt"))
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
        let userId = try fields.userId(d), deviceId = try fields.deviceId(d, "deviceId")
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
                                                    lastSeenAt: try fields.time(t, "updatedAt")))
            }
        }
        let record = DeviceRecord(
            userId: userId, deviceId: deviceId, platform: platform, environment: try fields.environment(d),
            osVersion: try fields.version(d, "osVersion"), appVersion: try fields.version(d, "appVersion"),
            pushToken: try fields.storedToken(d, "pushToken", platform: platform),
            pushToStartToken: try fields.storedToken(d, "pushToStartToken", platform: .apns),
            activityCount: activityTokens.count, createdAt: try fields.time(d, "createdAt"),
            lastSeenAt: try fields.time(d, "lastSeenAt"), sequence: sequence)
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
