import JSON
import Testing
@testable import RegistryHTTP

/// `GET /openapi.json` and the document itself: served without a credential,
/// valid JSON, OpenAPI 3.1, and holding exactly the rows of `RouteTable`
/// (path, method, security by surface, JSON body), so neither can change
/// without the other. `tools/api-validate` checks the document against the
/// OpenAPI 3.1 schema; `tools/api-fuzz` checks the server against the document.
@Suite struct OpenAPIDocumentTests {
    static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    private func document() throws -> JSONValue {
        try JSONParser.parse(PackageResources.openapi_json, duplicateMembers: .reject)
    }

    /// The document's operations as `"METHOD /path"`, the form of `Endpoint.label`.
    private func operations(_ doc: JSONValue) -> [String: JSONValue] {
        guard case .object(let paths)? = doc["paths"] else { return [:] }
        var found: [String: JSONValue] = [:]
        for (path, item) in paths.members {
            guard case .object(let item) = item else { continue }
            for (method, operation) in item.members where Self.methods.contains(method) {
                found["\(method.uppercased()) \(path)"] = operation
            }
        }
        return found
    }

    @Test func isServedWithoutACredential() async throws {
        try await Harness.with { h in
            let reply = await h.send("GET", "/openapi.json", as: .none)
            #expect(reply.status == 200)
            #expect(reply.header("Content-Type") == "application/json")
            #expect(reply.body == PackageResources.openapi_json)
            #expect(reply.json["openapi"]?.string?.hasPrefix("3.1.") == true)
            // A credential of either kind changes nothing.
            #expect(await h.send("GET", "/openapi.json", as: .apiKey).status == 200)
            #expect(await h.send("GET", "/openapi.json", as: .bearer("nonsense")).status == 200)
            #expect(await h.send("POST", "/openapi.json", body: "{}", as: .none).status == 405)
        }
    }

    @Test func isOpenAPI31() throws {
        let doc = try document()
        let version = try #require(doc["openapi"]?.string)
        #expect(version.hasPrefix("3.1."), "openapi: \(version)")
        #expect(doc["info"]?["title"]?.string == "registryd")
        #expect(doc["components"]?["securitySchemes"]?["deviceJWT"]?["scheme"]?.string == "bearer")
        #expect(doc["components"]?["securitySchemes"]?["internalAPIKey"]?["scheme"]?.string == "bearer")
        #expect(doc["components"]?["securitySchemes"]?["operatorKey"]?["scheme"]?.string == "bearer")
    }

    @Test func describesExactlyTheRouteTable() throws {
        let documented = Set(operations(try document()).keys)
        let routed = Set(RouteTable.endpoints.map(\.label))
        #expect(routed.subtracting(documented).isEmpty, "rows missing from openapi.json: \(routed.subtracting(documented).sorted())")
        #expect(documented.subtracting(routed).isEmpty, "operations with no row: \(documented.subtracting(routed).sorted())")
    }

    @Test func eachOperationHasItsRowsSecurityBodyAndParameter() throws {
        let documented = operations(try document())
        for endpoint in RouteTable.endpoints {
            guard let operation = documented[endpoint.label] else { continue }  // describesExactlyTheRouteTable reports it
            let schemes = operation["security"]?.array.flatMap { requirement -> [String] in
                guard case .object(let names) = requirement else { return [] }
                return names.members.keys.sorted()
            }
            // Alternatives: the internal key, or the read-only operator key where the row admits it.
            let expected: [String] = switch (endpoint.surface, endpoint.operatorAccess) {
            case (.device, _): ["deviceJWT"]
            case (.internal, .refused): ["internalAPIKey"]
            case (.internal, .reads), (.internal, .operatorView): ["internalAPIKey", "operatorKey"]
            case (.open, _): []
            }
            #expect(schemes == expected, "\(endpoint.label): security")

            let responses = operation["responses"]
            for status in ["400", "413", "431", "503"] {
                #expect(responses?[status] != nil, "\(endpoint.label): \(status) undocumented")
            }
            for status in ["401", "403"] {
                #expect((responses?[status] != nil) == (endpoint.surface != .open), "\(endpoint.label): \(status)")
            }

            let body = operation["requestBody"]?["content"]?["application/json"]
            #expect((body != nil) == endpoint.takesJSON, "\(endpoint.label): requestBody")
            #expect((responses?["415"] != nil) == endpoint.takesJSON, "\(endpoint.label): 415")

            let pathParameters = operation["parameters"]?.array.filter { $0["in"]?.string == "path" }
                .compactMap { $0["name"]?.string } ?? []
            #expect(pathParameters == (endpoint.parameterName.map { [$0] } ?? []), "\(endpoint.label): path parameters")
        }
    }

    @Test func everyReferenceResolves() throws {
        let doc = try document()
        var missing: [String] = []
        func walk(_ value: JSONValue) {
            switch value {
            case .object(let object):
                for (name, member) in object.members {
                    if name == "$ref", case .string(let target) = member {
                        let parts = target.split(separator: "/").dropFirst().map(String.init)
                        var node: JSONValue? = doc
                        for part in parts { node = node?[part] }
                        if !target.hasPrefix("#/") || node == nil { missing.append(target) }
                    } else {
                        walk(member)
                    }
                }
            case .array(let items):
                items.forEach(walk)
            default:
                break
            }
        }
        walk(doc)
        #expect(missing.isEmpty, "unresolved: \(missing)")
    }
}
