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

    public struct LineError: Error, CustomStringConvertible {
        public var line: Int
        public var field: String
        public var description: String { "line \(line): \(field) is missing or invalid" }
    }

    public static func decode(_ bytes: [UInt8], line: Int) throws -> ExportedRecord {
        let value = try JSONParser.parse(bytes)
        guard case .object(let top) = value else { throw LineError(line: line, field: "record") }
        func object(_ v: JSONValue?, _ name: String) throws -> JSONObject {
            guard case .object(let o)? = v else { throw LineError(line: line, field: name) }
            return o
        }
        func string(_ o: JSONObject, _ name: String) throws -> String {
            guard case .string(let s)? = o[name] else { throw LineError(line: line, field: name) }
            return s
        }
        func optionalString(_ o: JSONObject, _ name: String) throws -> String? {
            if o[name] == nil || o[name] == .null { return nil }
            return try string(o, name)
        }
        func time(_ o: JSONObject, _ name: String) throws -> Timestamp {
            guard let ms = o[name]?.exactInt64 else { throw LineError(line: line, field: name) }
            return Timestamp(milliseconds: ms)
        }
        func environment(_ o: JSONObject) throws -> APNsEnvironment {
            guard let e = APNsEnvironment(rawValue: try string(o, "environment")) else { throw LineError(line: line, field: "environment") }
            return e
        }
        func token(_ o: JSONObject, _ name: String) throws -> StoredToken? {
            if o[name] == nil || o[name] == .null { return nil }
            let t = try object(o[name], name)
            return StoredToken(token: try string(t, "token"), environment: try environment(t), updatedAt: try time(t, "updatedAt"))
        }
        if top["tombstone"] != nil {
            let t = try object(top["tombstone"], "tombstone")
            guard let sequence = t["sequence"]?.exactUInt64 else { throw LineError(line: line, field: "sequence") }
            return .tombstone(userId: try string(t, "userId"), deviceId: try string(t, "deviceId"),
                              sequence: sequence, deletedAt: try time(t, "deletedAt"))
        }
        let d = try object(top["device"], "device")
        guard let platform = Platform(rawValue: try string(d, "platform")) else { throw LineError(line: line, field: "platform") }
        var sequence: UInt64?
        if let s = d["sequence"], s != .null {
            guard let exact = s.exactUInt64 else { throw LineError(line: line, field: "sequence") }
            sequence = exact
        }
        let userId = try string(d, "userId"), deviceId = try string(d, "deviceId")
        guard Identifier.checkUserId(userId) == nil else { throw LineError(line: line, field: "userId") }
        guard Identifier.checkDeviceId(deviceId) == nil else { throw LineError(line: line, field: "deviceId") }
        var activityTokens: [ActivityToken] = []
        if case .array(let items)? = d["activityTokens"] {
            for item in items {
                let t = try object(item, "activityTokens")
                activityTokens.append(ActivityToken(activityId: try string(t, "activityId"), userId: userId, deviceId: deviceId,
                                                    token: try string(t, "token"), environment: try environment(t),
                                                    lastSeenAt: try time(t, "updatedAt")))
            }
        }
        let record = DeviceRecord(
            userId: userId, deviceId: deviceId, platform: platform, environment: try environment(d),
            osVersion: try optionalString(d, "osVersion"), appVersion: try optionalString(d, "appVersion"),
            pushToken: try token(d, "pushToken"), pushToStartToken: try token(d, "pushToStartToken"),
            activityCount: activityTokens.count, createdAt: try time(d, "createdAt"), lastSeenAt: try time(d, "lastSeenAt"),
            sequence: sequence)
        return .device(record, activityTokens: activityTokens)
    }
}
