import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RegistryClient
import RegistrydTestSupport
import Synchronization

/// The real `registryd`, started on a free port with a fresh data directory,
/// as the integration tests' server. It can be stopped and started again on
/// the same data directory (a restart); the port may change, so clients reach
/// it through `transport`, which follows it.
final class RegistrydProcess: Sendable {
    let directory: String
    private let running = Mutex<RegistrydServer?>(nil)
    private let baseURL = Mutex(URL(string: "http://127.0.0.1:1")!)

    init() async throws {
        directory = try Registryd.makeDirectory("registry-client")
        try await start()
    }

    var dataDirectory: String { directory + "/data" }

    /// Starts `serve` on the same data directory (a restart, when it ran before).
    func start() async throws {
        let server = try await RegistrydServer(arguments: ["--data-dir", dataDirectory], directory: directory)
        guard server.port > 0 else {
            _ = server.stop()
            throw Registryd.Failure(description: "registryd did not start: \(server.log)")
        }
        running.withLock { $0 = server }
        baseURL.withLock { $0 = URL(string: "http://127.0.0.1:\(server.port)")! }
    }

    /// SIGTERM, and waits for a clean exit.
    func stop() {
        _ = running.withLock { running in defer { running = nil }; return running }?.stop()
    }

    func remove() {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A transport to wherever the server listens now.
    var transport: any RegistryTransport { Following(server: self) }

    private struct Following: RegistryTransport {
        let server: RegistrydProcess

        func send(_ request: RegistryRequest) async throws -> RegistryResponse {
            try await URLSessionTransport(baseURL: server.baseURL.withLock { $0 }, timeout: 5).send(request)
        }
    }

    /// A JWT for `user`, from `registryd mint-token`.
    func token(for user: String) async throws -> String {
        try await Registryd.mintToken(user, in: directory, ["--data-dir", dataDirectory])
    }

    /// GETs an internal API path with the generated internal API key; the
    /// parsed JSON object.
    func internalGET(_ path: String) async throws -> [String: Any] {
        let key = try String(contentsOfFile: dataDirectory + "/secrets/internal-api.key", encoding: .utf8)
            .trimmingCharacters(in: .newlines)
        let response = try await URLSessionTransport(baseURL: baseURL.withLock { $0 }, timeout: 5)
            .send(RegistryRequest(method: "GET", path: path, headers: ["Authorization": "Bearer \(key)"]))
        guard response.status == 200,
              let object = try JSONSerialization.jsonObject(with: response.body) as? [String: Any] else {
            throw Registryd.Failure(description: "GET \(path): \(response.status)")
        }
        return object
    }
}
