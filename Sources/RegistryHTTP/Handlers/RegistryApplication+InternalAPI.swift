import HTTPServer
import JSON
import RegistryCore

/// `/internal/v1/...`, `/metrics` and `/healthz`: the push sender and
/// operators. These see tokens (sender views), so none of their answers
/// may be logged.
///
/// The sender's reads (a user's devices, the lookup, the activity fan-out)
/// show every app's records unless an optional `appId` (query parameter, or
/// body field of the lookup) narrows them (docs/api.md "App families").
extension RegistryApplication {
    /// A user's devices as the sender needs them (`view=sender`, the
    /// default: with tokens) or as an operator reads them (`view=operator`:
    /// the tokens' fingerprints instead, for the console).
    func userDevices(_ call: Call, _ reads: any RegistryReads) throws -> HTTPResponse {
        let userId = try call.parameter(FieldCheck.userId)
        let query = try QueryParameters(call.request.query)
        let appId = try FieldCheck.appId(in: query)
        let view: (DeviceRecord, inout JSONWriter) -> Void
        switch try query.single("view") {
        case nil, "sender"?: view = Views.sender(_:into:)
        case "operator"?: view = Views.operatorView(_:into:)
        default: throw APIError.invalidField("view", "must be 'sender' or 'operator'")
        }
        return Self.devicesDocument(try reads.devices(userId: userId, appId: appId), view)
    }

    /// A user's token history (docs/api.md "Token history"), newest first;
    /// `[]` for a user the registry does not know.
    func tokenHistory(_ call: Call, _ reads: any RegistryReads) throws -> HTTPResponse {
        let userId = try call.parameter(FieldCheck.userId)
        let limit = try FieldCheck.limit(in: QueryParameters(call.request.query), standard: HistoryEvent.maxPerUser,
                                         max: HistoryEvent.maxPerUser)
        let events = try reads.history(userId: userId, limit: limit)
        return Self.json(200, capacity: 16 + events.count * 320) { w in
            w.beginObject()
            w.key("events")
            w.beginArray()
            for event in events { Views.historyEvent(event, into: &w) }
            w.endArray()
            w.endObject()
        }
    }

    func sweep(_ call: Call) async throws -> HTTPResponse {
        let fields = try BodyFields(optionalBody: call.request.body)
        let counts = try await store.sweep(dryRun: try fields.optionalBool("dryRun") ?? false)
        return Self.json(200, StatsDocument.sweep(counts))
    }

    func stats(_ call: Call, _ reads: any RegistryReads) throws -> HTTPResponse {
        Self.json(200, StatsDocument.stats(try reads.stats()))
    }

    /// `GET /metrics` answers whether or not the store can be read: a
    /// PostgreSQL registry whose database is down still shows its requests,
    /// commits and deliveries, and `registry_store_readable` 0 (the store's
    /// own figures are left out). Not a store read for that reason, so it
    /// runs as a task, not inline; a scrape comes every few seconds.
    func prometheusMetrics(_ call: Call) async -> HTTPResponse {
        let stats = try? await store.stats()
        return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
                            body: Array(metrics.render(stats: stats).utf8))
    }

    func healthz(_ call: Call, _ reads: any RegistryReads) throws -> HTTPResponse {
        try reads.checkHealth()
        return Self.json(200, .object([("status", .string("ok"))]))
    }

    func lookupUsers(_ call: Call, _ reads: any RegistryReads) throws -> HTTPResponse {
        let fields = try BodyFields(body: call.request.body)
        guard let value = fields.object["userIds"], value != .null else {
            throw APIError.invalidField("userIds", "is required")
        }
        guard case .array(let elements) = value else {
            throw APIError.invalidField("userIds", "must be an array of strings, got \(value.typeName)")
        }
        guard elements.count <= configuration.maxLookupUsers else {
            throw APIError.invalidField("userIds", "must hold at most \(configuration.maxLookupUsers) ids")
        }
        var userIds: [String] = []
        for (index, element) in elements.enumerated() {
            guard case .string(let id) = element else {
                throw APIError.invalidField("userIds[\(index)]", "must be a string, got \(element.typeName)")
            }
            userIds.append(try FieldCheck.userId(id, field: "userIds[\(index)]"))
        }
        let appId = try fields.optionalAppId()
        let found = try reads.devices(userIds: userIds, appId: appId)
        let deviceCount = found.reduce(0) { $0 + $1.devices.count }
        return Self.json(200, capacity: 16 + found.count * 32 + deviceCount * Self.bytesPerDevice) { w in
            w.beginObject()
            w.key("users")
            w.beginObject()
            for user in found {
                w.key(user.userId)
                w.beginArray()
                for device in user.devices { Views.sender(device, into: &w) }
                w.endArray()
            }
            w.endObject()
            w.endObject()
        }
    }

    func activityTokens(_ call: Call, _ reads: any RegistryReads) throws -> HTTPResponse {
        let activityId = try call.parameter(FieldCheck.activityId)
        let parameters = try QueryParameters(call.request.query)
        let limit = try FieldCheck.limit(in: parameters, standard: configuration.defaultPageLimit,
                                         max: configuration.maxPageLimit)
        let cursor = try parameters.single("cursor")
        if let cursor, cursor.isEmpty { throw APIError.invalidField("cursor", "must not be empty") }
        let appId = try FieldCheck.appId(in: parameters)
        let page = try reads.activityTokens(activityId: activityId, appId: appId, limit: limit, cursor: cursor)
        if page.unreadable > 0 {
            metrics.recordUnreadableTokens(page.unreadable)
            logger.error("unreadable_tokens_skipped", [("route", .string(call.endpoint.label)), ("count", .int(Int64(page.unreadable))),
                                                       ("detail", .string("stored tokens whose sealed value does not open were left out of the fan-out; registryd check names them"))])
        }
        return Self.json(200, capacity: 32 + page.tokens.count * 256) { w in
            w.beginObject()
            w.key("tokens")
            w.beginArray()
            for token in page.tokens { Views.activityToken(token, into: &w) }
            w.endArray()
            w.member("nextCursor", page.nextCursor)
            w.endObject()
        }
    }

    func feedback(_ call: Call) async throws -> HTTPResponse {
        let fields = try BodyFields(body: call.request.body)
        let token = try FieldCheck.senderToken(fields.requiredString("token"))
        guard let reason = try fields.optionalEnum("reason", FeedbackReason.self) else {
            throw APIError.invalidField("reason", "is required")
        }
        var before: Timestamp?
        switch fields.object["timestamp"] {
        case nil, .null?:
            break
        case .string(let text)?:
            guard let parsed = RFC3339.parse(text) else {
                throw APIError.invalidField("timestamp", "must be an RFC 3339 date-time or epoch milliseconds")
            }
            before = parsed
        case let number? where number.exactInt64 != nil && number.exactInt64! >= 0:
            before = Timestamp(milliseconds: number.exactInt64!)
        default:
            throw APIError.invalidField("timestamp", "must be an RFC 3339 date-time or epoch milliseconds")
        }
        let removed = try await store.removeToken(token, reason: reason, registeredBefore: before)
        metrics.recordFeedback(reason: reason, removed: removed)
        return Self.json(200, .object([("removed", .int(Int64(removed)))]))
    }

    /// APNs environment correction (API v1.1, docs/api.md): the sender found `token`
    /// works on the other APNs host; its environment is set wherever it is
    /// held, each change an `environmentCorrected` history event.
    func correctEnvironment(_ call: Call) async throws -> HTTPResponse {
        let fields = try BodyFields(body: call.request.body)
        let token = try FieldCheck.senderToken(fields.requiredString("token"))
        guard let environment = try fields.optionalEnum("environment", APNsEnvironment.self) else {
            throw APIError.invalidField("environment", "is required")
        }
        let updated = try await store.correctEnvironment(token: token, environment: environment)
        return Self.json(200, .object([("updated", .int(Int64(updated)))]))
    }
}
