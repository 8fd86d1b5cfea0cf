import Foundation
import HTTPServer
import RegistrydTestSupport

/// The application the live tests run: it echoes what it received in
/// headers and body, refuses `/forbidden` from `head`, sleeps on `/slow`,
/// answers `/inline` on the server thread, and enforces a small body limit
/// including the declared-size check the real application owns.
struct EchoApplication: HTTPApplication {
    var maxBodyBytes = 1024
    var slowMilliseconds = 200
    /// Called when a `/slow` handler starts, before it sleeps.
    var slowStarted: (@Sendable () -> Void)? = nil

    func head(_ request: HTTPRequest) -> HeadDecision {
        if request.path == "/forbidden" {
            return .respond(.error(status: 403, code: "forbidden", message: "not for you"))
        }
        if let declared = request.headers["Content-Length"].flatMap({ Int($0) }), declared > maxBodyBytes {
            return .respond(.error(status: 413, code: "payload_too_large", message: "declared body too large"))
        }
        if request.path == "/inline" {
            return .readBody(maxBytes: maxBodyBytes, then: .inline { Self.echo($0, handler: "inline") })
        }
        let slow = slowMilliseconds, started = slowStarted
        return .readBody(maxBytes: maxBodyBytes, then: .suspending { request in
            if request.path == "/slow" {
                started?()
                try? await Task.sleep(for: .milliseconds(slow))
            }
            return Self.echo(request, handler: "suspending")
        })
    }

    static func echo(_ request: HTTPRequest, handler: String) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [
            ("X-Handler", handler),
            ("X-Method", request.method),
            ("X-Path", request.path),
            ("X-Query", request.query ?? "<none>"),
            ("X-Version", request.version),
            ("X-Header-Count", String(request.headers.values("X-Repeat").count)),
        ], body: request.body)
    }
}

/// Starts a server on a free loopback port; the caller stops it.
func makeServer(_ application: any HTTPApplication = EchoApplication(),
                configure: (inout HTTPServerConfiguration) -> Void = { _ in }) throws -> HTTPServer {
    var configuration = HTTPServerConfiguration()
    configuration.port = 0
    configuration.threads = 2
    configure(&configuration)
    let server = HTTPServer(configuration: configuration, application: application)
    try server.start()
    return server
}

/// One request on a fresh connection.
func exchange(_ port: UInt16, _ request: String) throws -> RawClient.Response {
    let client = try RawClient(port: port)
    try client.send(request)
    return try client.readResponse()
}
