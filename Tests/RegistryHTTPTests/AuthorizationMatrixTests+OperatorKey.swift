import HTTPServer
import JSON
import Testing
@testable import RegistryHTTP

/// The read-only operator key on every route: it reads what the console
/// reads (the stats, a notification and its deliveries, a user's history,
/// the operator view of a user's devices, the operator reads) exactly as
/// the internal key does, and every other route answers it 403 and changes
/// nothing: writes, feedback, cancel, the token-bearing sender reads,
/// `/metrics`, and the whole device API.
extension AuthorizationMatrixTests {
    /// One route as the operator key calls it: its row, a request for it,
    /// and whether the key is admitted.
    struct OperatorCall: CustomTestStringConvertible, Sendable {
        var label: String
        var target: String
        var body: String?
        var admitted: Bool
        var method: String { String(label.prefix { $0 != " " }) }
        var testDescription: String { "\(method) \(target)" }
    }

    /// A request for every internal row; `{notificationId}` stands for a notification of alice's.
    static let operatorCalls: [OperatorCall] = [
        OperatorCall(label: "GET /internal/v1/users/{userId}/devices", target: "/internal/v1/users/alice/devices?view=operator",
                     admitted: true),
        OperatorCall(label: "GET /internal/v1/users/{userId}/history", target: "/internal/v1/users/alice/history", admitted: true),
        OperatorCall(label: "POST /internal/v1/users/lookup", target: "/internal/v1/users/lookup", body: #"{"userIds": ["alice"]}"#,
                     admitted: false),
        OperatorCall(label: "GET /internal/v1/activities/{activityId}/tokens", target: "/internal/v1/activities/m1/tokens",
                     admitted: false),
        OperatorCall(label: "GET /internal/v1/activities/{activityId}/token-counts", target: "/internal/v1/activities/m1/token-counts",
                     admitted: true),
        OperatorCall(label: "GET /internal/v1/removals", target: "/internal/v1/removals?bucket=day&buckets=3", admitted: true),
        OperatorCall(label: "POST /internal/v1/feedback", target: "/internal/v1/feedback",
                     body: #"{"token": "\#(token(1))", "reason": "Unregistered"}"#, admitted: false),
        OperatorCall(label: "POST /internal/v1/tokens/environment", target: "/internal/v1/tokens/environment",
                     body: #"{"token": "\#(token(1))", "environment": "sandbox"}"#, admitted: false),
        OperatorCall(label: "POST /internal/v1/notifications", target: "/internal/v1/notifications",
                     body: #"{"target": {"userId": "alice"}, "payload": {"aps": {"alert": "hi"}}}"#, admitted: false),
        OperatorCall(label: "GET /internal/v1/notifications", target: "/internal/v1/notifications", admitted: true),
        OperatorCall(label: "GET /internal/v1/deliveries/queue", target: "/internal/v1/deliveries/queue", admitted: true),
        OperatorCall(label: "GET /internal/v1/notifications/{notificationId}", target: "/internal/v1/notifications/{notificationId}",
                     admitted: true),
        OperatorCall(label: "DELETE /internal/v1/notifications/{notificationId}", target: "/internal/v1/notifications/{notificationId}",
                     admitted: false),
        OperatorCall(label: "POST /internal/v1/sweep", target: "/internal/v1/sweep", body: #"{"dryRun": true}"#, admitted: false),
        OperatorCall(label: "GET /internal/v1/stats", target: "/internal/v1/stats", admitted: true),
        OperatorCall(label: "GET /metrics", target: "/metrics", admitted: false),
    ]

    /// alice's records, and a notification to her, still queued (no sender runs here): its id.
    private func loadAliceAndNotify(_ h: Harness) async throws -> String {
        await loadAlice(h)
        let reply = await h.notify(#"{"target": {"userId": "alice"}, "payload": {"aps": {"alert": "goal"}}}"#)
        return try #require(reply.json["notification"]?["id"]?.string, "\(reply.text)")
    }

    /// Everything a refused call could have changed: alice's records, and the notification's counts.
    private func state(_ h: Harness, _ id: String) async -> [JSONValue] {
        await aliceAsStored(h) + [await h.send("GET", "/internal/v1/notifications/\(id)", as: .apiKey).json["notification"] ?? .null]
    }

    @Test func everyInternalRouteIsInTheOperatorKeysMatrix() {
        let internalRows = RouteTable.endpoints.filter { $0.surface == .internal }.map(\.label)
        #expect(Set(Self.operatorCalls.map(\.label)) == Set(internalRows))
        #expect(Self.operatorCalls.count == internalRows.count)
    }

    @Test(arguments: operatorCalls)
    func theOperatorKeyReadsWhatTheConsoleReadsAndIsRefusedEverythingElse(_ call: OperatorCall) async throws {
        try await Harness.with { plain in
            let h = plain.delivering()
            let id = try await loadAliceAndNotify(h)
            let target = call.target.replacingOccurrences(of: "{notificationId}", with: id)
            let before = await state(h, id)
            let reply = await h.send(call.method, target, body: call.body, as: .operatorKey)
            if call.admitted {
                #expect(reply.status == 200, "\(reply.text)")
                let asInternalKey = await h.send(call.method, target, body: call.body, as: .apiKey)
                #expect(reply.body == asInternalKey.body, "the operator key reads what the internal key reads: \(reply.text)")
            } else {
                #expect(reply.status == 403, "\(reply.text)")
                #expect(reply.errorCode == "forbidden", "\(reply.text)")
                #expect(reply.errorMessage.contains("operator key"), "\(reply.text)")
            }
            for n: UInt8 in 1...3 { #expect(!reply.text.contains(token(n)), "a token reached the operator key") }
            #expect(await state(h, id) == before, "the operator key changed something")
        }
    }

    /// A user's devices are a sender read: only their operator view (fingerprints) is the operator key's.
    @Test func theOperatorKeyGetsNoSenderViewOfAUsersDevices() async throws {
        try await Harness.with { h in
            await loadAlice(h)
            for target in ["/internal/v1/users/alice/devices", "/internal/v1/users/alice/devices?view=sender",
                           "/internal/v1/users/alice/devices?view=operator&view=sender", "/internal/v1/users/alice/devices?view=Operator"] {
                for method in ["GET", "HEAD"] {
                    let reply = await h.send(method, target, as: .operatorKey)
                    #expect(reply.status == 403 && reply.errorCode == "forbidden", "\(method) \(target): \(reply.text)")
                    #expect(!reply.text.contains(token(1)))
                }
            }
            let operatorView = await h.send("GET", "/internal/v1/users/alice/devices?appId=default&view=operator", as: .operatorKey)
            #expect(operatorView.status == 200, "\(operatorView.text)")
            #expect(operatorView.json["devices"]?[0]?["pushTokenFingerprint"]?.string?.count == 12, "\(operatorView.text)")
        }
    }

    @Test(arguments: calls)
    func theOperatorKeyIsNoCredentialOnTheDeviceAPI(_ call: Call) async throws {
        try await Harness.with { h in
            await loadAlice(h)
            let before = await aliceAsStored(h)
            let reply = await h.send(call.method, call.target, body: call.body, as: .operatorKey)
            #expect(reply.status == 403 && reply.errorCode == "forbidden", "\(reply.text)")
            #expect(await aliceAsStored(h) == before)
        }
    }

    /// Were admission to let the operator key through where it is refused,
    /// the handler would still not run: it answers 401 and reads nothing.
    @Test func noRefusedRouteRunsWithTheOperatorCredential() async throws {
        try await Harness.with { plain in
            let h = plain.delivering()
            let id = try await loadAliceAndNotify(h)
            let before = await state(h, id)
            for call in Self.operatorCalls where !call.admitted {
                let endpoint = try #require(RouteTable.endpoints.first { $0.label == call.label })
                let parameter = endpoint.parameterName.map { $0 == "notificationId" ? id : (Self.parameters[$0] ?? "x") }
                let response = await run(h, Router.Match(endpoint: endpoint, rawParameter: parameter), call.body, query: nil)
                #expect(response.status == 401, "\(call.label): \(String(decoding: response.body, as: UTF8.self))")
            }
            let devices = try #require(RouteTable.endpoints.first { $0.label == "GET /internal/v1/users/{userId}/devices" })
            for query in [nil, "view=sender"] {
                let response = await run(h, Router.Match(endpoint: devices, rawParameter: "alice"), nil, query: query)
                #expect(response.status == 401, "\(query ?? "no view"): \(String(decoding: response.body, as: UTF8.self))")
                #expect(!String(decoding: response.body, as: UTF8.self).contains(token(1)))
            }
            #expect(await state(h, id) == before)
        }
    }

    /// `match`'s handler run directly with the operator credential (no admission).
    private func run(_ h: Harness, _ match: Router.Match, _ body: String?, query: String?) async -> HTTPResponse {
        var request = HTTPRequest(method: match.endpoint.method, path: "/", query: query, headers: [])
        request.body = Array((body ?? "").utf8)
        switch h.application.handler(for: match, credential: .operatorKey) {
        case .inline(let respond): return respond(request)
        case .suspending(let respond): return await respond(request)
        }
    }
}
