import Codecs
import JSON
import RegistryCore

/// Typed access to a JSON request body's members, each failure a 400
/// `invalid_field` naming the member. Unknown members are ignored (forward
/// compatibility); `null` counts as omitted except where a field gives it a
/// meaning of its own (`pushToken: null` removes the token).
struct BodyFields {
    let object: JSONObject

    /// Parses the body; anything but a JSON object is `invalid_json`.
    init(body: [UInt8]) throws(APIError) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(body)
        } catch {
            throw .invalidJSON(error.message)
        }
        guard case .object(let object) = value else {
            throw .invalidJSON("expected an object, got \(value.typeName)")
        }
        self.object = object
        path = ""
    }

    /// Where these members sit in the body (`"target."`), so a refusal names
    /// the member as the caller wrote it: `target.userId`, not `userId`.
    let path: String

    /// A nested object's members (a body's `target`, say), under `path`.
    init(_ object: JSONObject, path: String = "") {
        self.object = object
        self.path = path
    }

    /// An optional body: empty means `{}`.
    init(optionalBody body: [UInt8]) throws(APIError) {
        if body.isEmpty { self.init(JSONObject()) } else { try self.init(body: body) }
    }

    /// Present-and-not-null, present-null, or absent.
    enum Presence<T> {
        case absent
        case null
        case value(T)
    }

    func string(_ name: String) throws(APIError) -> Presence<String> {
        switch object[name] {
        case nil: return .absent
        case .null?: return .null
        case .string(let s)?: return .value(s)
        case let other?: throw .invalidField(path + name, "must be a string, got \(other.typeName)")
        }
    }

    func requiredString(_ name: String) throws(APIError) -> String {
        guard case .value(let s) = try string(name) else { throw .invalidField(path + name, "is required") }
        return s
    }

    func optionalString(_ name: String) throws(APIError) -> String? {
        guard case .value(let s) = try string(name) else { return nil }
        return s
    }

    func optionalBool(_ name: String) throws(APIError) -> Bool? {
        switch object[name] {
        case nil, .null?: return nil
        case .bool(let b)?: return b
        case let other?: throw .invalidField(path + name, "must be a boolean, got \(other.typeName)")
        }
    }

    /// `sequence`: an unsigned 64-bit integer, parsed exactly.
    func optionalSequence(_ name: String = "sequence") throws(APIError) -> UInt64? {
        switch object[name] {
        case nil, .null?: return nil
        case let value? where value.exactUInt64 != nil: return value.exactUInt64
        case .number?: throw .invalidField(name, FieldCheck.sequenceRule)
        case let other?: throw .invalidField(name, "must be an integer, got \(other.typeName)")
        }
    }

    /// `appId` (docs/api.md "App families"): absent or `null` is `nil`,
    /// which a registration takes as `default`.
    func optionalAppId(_ name: String = "appId") throws(APIError) -> String? {
        guard let value = try optionalString(name) else { return nil }
        return try FieldCheck.appId(value, field: name)
    }

    /// One of an enum's raw values.
    func optionalEnum<E: RawRepresentable & CaseIterable>(_ name: String, _ type: E.Type) throws(APIError) -> E?
    where E.RawValue == String {
        guard let raw = try optionalString(name) else { return nil }
        guard let value = E(rawValue: raw) else {
            let allowed = E.allCases.map { "'\($0.rawValue)'" }.joined(separator: ", ")
            throw .invalidField(name, "must be one of \(allowed)")
        }
        return value
    }
}

/// Identifier checks that turn `Identifier.Problem` into `invalid_field`.
enum FieldCheck {
    /// What a `sequence` must be, in a body or a query.
    static let sequenceRule = "must be an integer from 0 to \(UInt64.max)"

    /// A `sequence` query parameter: decimal digits, exactly.
    static func sequence(_ text: String) throws(APIError) -> UInt64 {
        guard let value = UInt64(decimalDigits: text) else { throw .invalidField("sequence", sequenceRule) }
        return value
    }

    static func deviceId(_ value: String, field: String = "deviceId") throws(APIError) -> String {
        if let problem = Identifier.checkDeviceId(value) { throw .invalidField(field, problem.message) }
        return value
    }

    static func activityId(_ value: String, field: String = "activityId") throws(APIError) -> String {
        if let problem = Identifier.checkActivityId(value) { throw .invalidField(field, problem.message) }
        return value
    }

    static func userId(_ value: String, field: String = "userId") throws(APIError) -> String {
        if let problem = Identifier.checkUserId(value) { throw .invalidField(field, problem.message) }
        return value
    }

    /// An `appId`: 1–155 bytes of `[A-Za-z0-9.-]`.
    static func appId(_ value: String, field: String = "appId") throws(APIError) -> String {
        if let problem = Identifier.checkAppId(value) { throw .invalidField(field, problem.message) }
        return value
    }

    /// A `limit` query parameter: decimal digits, 1 to `max`; `standard` when absent.
    static func limit(in query: QueryParameters, standard: Int, max: Int) throws(APIError) -> Int {
        guard let text = try query.single("limit") else { return standard }
        guard let n = UInt64(decimalDigits: text), n >= 1, n <= UInt64(max) else {
            throw .invalidField("limit", "must be an integer from 1 to \(max)")
        }
        return Int(n)
    }

    /// An optional `appId` query parameter; `nil` when absent.
    static func appId(in query: QueryParameters) throws(APIError) -> String? {
        guard let value = try query.single("appId") else { return nil }
        return try appId(value)
    }

    static func version(_ value: String?, field: String) throws(APIError) -> String? {
        guard let value else { return nil }
        if let problem = Identifier.checkVersion(value) { throw .invalidField(field, problem.message) }
        return value
    }

    static func apnsToken(_ value: String, field: String = "token") throws(APIError) -> String {
        switch Identifier.normalizeAPNsToken(value) {
        case .success(let token): return token
        case .failure(let problem): throw .invalidField(field, problem.message)
        }
    }

    /// A token the sender names (feedback, environment correction): it may
    /// be an APNs or an FCM token, so only what no token can hold is
    /// refused: 1–4096 characters of `[A-Za-z0-9_:.-]` (hex is a subset).
    static func senderToken(_ value: String, field: String = "token") throws(APIError) -> String {
        if case .failure(let problem) = Identifier.normalizeFCMToken(value) { throw .invalidField(field, problem.message) }
        return value
    }

    /// A percent-encoded path segment, decoded then checked.
    static func pathSegment(_ raw: String, field: String,
                            check: (String, String) throws(APIError) -> String) throws(APIError) -> String {
        guard let decoded = PercentDecoding.decode(raw) else {
            throw .invalidField(field, "is not valid percent-encoding")
        }
        return try check(decoded, field)
    }
}
