import HTTPServer
import Testing
@testable import RegistryHTTP

/// The open routes run with an anonymous credential, and no other route's
/// handler runs with one: an anonymous caller never reaches operator or
/// device data, even if admission were to let one through.
extension AuthorizationMatrixTests {
    /// What a test request may carry in `Authorization`.
    static let callers: [Caller] = [.none, .apiKey, .operatorKey, .user("alice"), .bearer("not-a-credential")]

    @Test func openRoutesGetAnAnonymousCredentialWhateverTheRequestCarries() async throws {
        try await Harness.with { h in
            for endpoint in RouteTable.endpoints where endpoint.surface == .open {
                for caller in Self.callers {
                    let credential = h.application.admit(request(endpoint, caller, h), endpoint)
                    #expect((try? credential.get()) == .anonymous, "\(endpoint.label) as \(caller)")
                }
            }
        }
    }

    @Test func noOtherRouteAdmitsOrRunsAnAnonymousCaller() async throws {
        try await Harness.with { h in
            await loadAlice(h)
            let before = await aliceAsStored(h)
            let others = RouteTable.endpoints.filter { $0.surface != .open }
            #expect(Set(RouteTable.endpoints.filter { $0.surface == .open }.map(\.label))
                    == ["GET /healthz", "GET /openapi.json", "GET /console", "GET /console/app.js", "GET /console/app.css"])
            for endpoint in others {
                for caller in Self.callers {
                    let credential = try? h.application.admit(request(endpoint, caller, h), endpoint).get()
                    #expect(credential != .anonymous, "\(endpoint.label) as \(caller)")
                }
                let parameter = endpoint.parameterName.map { Self.parameters[$0] ?? "x" }
                let match = Router.Match(endpoint: endpoint, rawParameter: parameter)
                var call = request(endpoint, .none, h)
                call.body = Array(#"{"userIds": ["alice"], "deviceId": "d1"}"#.utf8)
                let response: HTTPResponse
                switch h.application.handler(for: match, credential: .anonymous) {
                case .inline(let respond): response = respond(call)
                case .suspending(let respond): response = await respond(call)
                }
                #expect(response.status == 401, "\(endpoint.label): \(String(decoding: response.body, as: UTF8.self))")
                #expect(!String(decoding: response.body, as: UTF8.self).contains(token(1)), "\(endpoint.label)")
            }
            #expect(await aliceAsStored(h) == before, "an anonymous call changed alice's records")
        }
    }

    /// Path parameters naming alice's records, so a handler that ran would find them.
    static let parameters = ["userId": "alice", "deviceId": "d1", "activityId": "m1"]

    /// A bodiless request for `endpoint`'s row carrying `caller`'s credential.
    private func request(_ endpoint: Endpoint, _ caller: Caller, _ h: Harness) -> HTTPRequest {
        var headers: [(String, String)] = []
        switch caller {
        case .user(let user): headers.append(("Authorization", "Bearer \(h.jwt(user: user))"))
        case .apiKey: headers.append(("Authorization", "Bearer \(Harness.apiKey)"))
        case .operatorKey: headers.append(("Authorization", "Bearer \(Harness.operatorKey)"))
        case .bearer(let token): headers.append(("Authorization", "Bearer \(token)"))
        case .none: break
        }
        let path = endpoint.segments.map { segment in
            switch segment {
            case .literal(let bytes): String(decoding: bytes, as: UTF8.self)
            case .parameter(let name): Self.parameters[name] ?? "x"
            }
        }
        return HTTPRequest(method: endpoint.method, path: "/" + path.joined(separator: "/"), query: nil, headers: headers)
    }
}
