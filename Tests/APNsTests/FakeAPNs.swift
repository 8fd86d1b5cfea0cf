import APNs
import Foundation
import Glibc
import JSON
import RegistrydTestSupport

/// A running `tools/fake-apns` (Python, h2) with its own script and log,
/// and clients that trust its private CA.
///
/// `@unchecked Sendable`: one test owns it; the process handle is only
/// touched by `start` and `stop`.
final class FakeAPNs: @unchecked Sendable {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path
    static let tool = repositoryRoot + "/tools/fake-apns"
    static let teamId = "TEAM123456"
    static let keyId = "KEY1234567"
    static let topic = "com.example.app"

    /// Whether the fake can run here: Debian's python3 with h2 and cryptography.
    static let available: Bool = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
        && shell(["/usr/bin/python3", "-c", "import h2, cryptography"]) != nil

    /// The CA, server certificate and provider key, made once per test process.
    static let shared: String? = {
        let directory = temporaryDirectory()
        return shell(["/usr/bin/python3", tool, "--make-key", directory]) == nil ? nil : directory
    }()

    let directory: String
    let productionPort: Int
    let sandboxPort: Int
    private let process: Process

    private init(directory: String, productionPort: Int, sandboxPort: Int, process: Process) {
        self.directory = directory
        self.productionPort = productionPort
        self.sandboxPort = sandboxPort
        self.process = process
    }

    var caFile: String { Self.shared! + "/ca.pem" }
    var logFile: String { directory + "/log.jsonl" }

    /// Starts the fake with `script` (a JSON object of tokens to answers)
    /// and waits until it listens.
    static func start(script: String) async throws -> FakeAPNs {
        guard let shared = await offThePool({ Self.shared }) else { throw FakeAPNsError("fake-apns --make-key failed") }
        let directory = temporaryDirectory()
        let ready = directory + "/ready.json"
        try script.write(toFile: directory + "/script.json", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [tool, "--cert-dir", shared, "--auth-key", shared + "/apns-key.pub.pem",
                             "--team-id", teamId, "--key-id", keyId, "--topic", topic,
                             "--script", directory + "/script.json", "--log", directory + "/log.jsonl",
                             "--ready-file", ready, "--stall-seconds", "30"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<200 {
            if let data = FileManager.default.contents(atPath: ready), case .object(let ports)? = try? JSONParser.parse([UInt8](data)),
               let production = ports["production"]?.exactInt64, let sandbox = ports["sandbox"]?.exactInt64 {
                return FakeAPNs(directory: directory, productionPort: Int(production), sandboxPort: Int(sandbox), process: process)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        kill(process.processIdentifier, SIGKILL)
        throw FakeAPNsError("fake-apns did not become ready")
    }

    /// SIGKILL: the test process's threads block SIGTERM, and the fake
    /// inherits that mask, so it would never see a SIGTERM. Its log is
    /// flushed every 50 ms, and `log(count:)` has read it by then.
    func stop() async {
        kill(process.processIdentifier, SIGKILL)
        let process = process
        await offThePool { process.waitUntilExit() }
    }

    func tokens() throws -> ProviderTokens {
        try ProviderTokens(key: ProviderKey(contentsOf: Self.shared! + "/apns-key.p8"), teamId: Self.teamId, keyId: Self.keyId)
    }

    func configuration(timeout: Duration = .seconds(5)) -> APNsClientConfiguration {
        APNsClientConfiguration(productionURL: "https://127.0.0.1:\(productionPort)", sandboxURL: "https://127.0.0.1:\(sandboxPort)",
                                caFile: caFile, requestTimeout: timeout)
    }

    /// The log's records; the fake flushes it every 50 ms, so this waits
    /// until `count` records are there (or 5 s pass).
    func log(count: Int) async throws -> [JSONObject] {
        var records: [JSONObject] = []
        for _ in 0..<100 {
            let text = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
            records = text.split(separator: "\n").compactMap { line in
                if case .object(let object)? = try? JSONParser.parse(Array(line.utf8)) { object } else { nil }
            }
            if records.count >= count { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        return records
    }
}

struct FakeAPNsError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A request to the fake with the test topic.
func request(_ token: String, host: APNsHost = .production, collapseId: String? = nil) -> APNsRequest {
    APNsRequest(deviceToken: token, host: host, topic: FakeAPNs.topic, pushType: "alert", priority: 10,
                expiration: 1_700_000_000, collapseId: collapseId, apnsId: UUID().uuidString.lowercased(),
                payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
}

/// A 64-digit hex token ending in `suffix`.
func token(_ suffix: String) -> String {
    String(repeating: "0", count: 64 - suffix.count) + suffix
}
