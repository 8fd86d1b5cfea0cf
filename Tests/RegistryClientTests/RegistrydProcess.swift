import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RegistryClient
import Synchronization

/// The real `registryd`, started on a free port with a fresh data directory,
/// as the integration tests' server. It can be stopped and started again on
/// the same data directory (a restart); the port may change, so clients reach
/// it through `transport`, which follows it.
final class RegistrydProcess: Sendable {
    /// `registryd` sits next to the test bundle in SwiftPM's build directory.
    static let binary: String? = {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while url.path != "/" {
            let candidate = url.appendingPathComponent("registryd").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            url.deleteLastPathComponent()
        }
        return nil
    }()

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let directory: String
    private let running = Mutex<(process: Process, port: Int)?>(nil)
    private let baseURL = Mutex(URL(string: "http://127.0.0.1:1")!)

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("registry-client-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try start()
    }

    var dataDirectory: String { directory + "/data" }

    /// Starts `serve` and waits (up to 20 s) for its "listening" line.
    func start() throws {
        guard let binary = Self.binary else { throw Failure(description: "registryd is not built next to the tests") }
        let log = directory + "/server-\(UUID().uuidString).log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--data-dir", dataDirectory, "--listen", "127.0.0.1:0"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let range = text.range(of: #""address":"127.0.0.1:"#),
               let port = Int(text[range.upperBound...].prefix(while: \.isNumber)) {
                running.withLock { $0 = (process, port) }
                baseURL.withLock { $0 = URL(string: "http://127.0.0.1:\(port)")! }
                return
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        process.terminate()
        throw Failure(description: "registryd did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }

    /// SIGTERM, and waits for a clean exit.
    func stop() {
        guard let (process, _) = running.withLock({ running in defer { running = nil }; return running }) else { return }
        process.terminate()
        process.waitUntilExit()
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
    func token(for user: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary ?? "registryd")
        process.arguments = ["mint-token", "--data-dir", dataDirectory, "--user", user]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
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
            throw Failure(description: "GET \(path): \(response.status)")
        }
        return object
    }
}
