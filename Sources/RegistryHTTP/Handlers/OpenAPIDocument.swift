import HTTPServer

/// `GET /openapi.json`: the OpenAPI 3.1 description of this HTTP contract
/// (`Sources/RegistryHTTP/OpenAPI/openapi.json`), compiled into the binary by
/// SwiftPM's `.embedInCode` as `PackageResources.openapi_json`, so the one copy
/// in the source tree is the one served and no resource bundle has to sit
/// beside the executable.
enum OpenAPIDocument {
    static let bytes: [UInt8] = PackageResources.openapi_json
}

extension RegistryApplication {
    func openAPIDocument(_ call: Call) throws -> HTTPResponse {
        HTTPResponse(status: 200, headers: Self.jsonHeaders, body: OpenAPIDocument.bytes)
    }
}
