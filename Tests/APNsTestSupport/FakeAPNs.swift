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
package final class FakeAPNs: Stoppable, @unchecked Sendable {
    package static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path
    package static let tool = repositoryRoot + "/tools/fake-apns"
    package static let teamId = "TEAM123456"
    package static let keyId = "KEY1234567"
    package static let topic = "com.example.app"

    /// Whether the fake can run here: Debian's python3 with h2 and cryptography.
    package static let available: Bool = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
        && shell(["/usr/bin/python3", "-c", "import h2, cryptography"]) != nil

    /// The CA, server certificate and provider key, made once per test process.
    package static let shared: String? = {
        let directory = temporaryDirectory()
        return shell(["/usr/bin/python3", tool, "--make-key", directory]) == nil ? nil : directory
    }()

    package let directory: String
    package let productionPort: Int
    package let sandboxPort: Int
    private let process: Process

    private init(directory: String, productionPort: Int, sandboxPort: Int, process: Process) {
        self.directory = directory
        self.productionPort = productionPort
        self.sandboxPort = sandboxPort
        self.process = process
    }

    package var caFile: String { Self.shared! + "/ca.pem" }
    package var logFile: String { directory + "/log.jsonl" }

    /// Starts the fake with `script` (a JSON object of tokens to answers)
    /// and `options` (e.g. `--max-streams 4`), and waits until it listens.
    package static func start(script: String, options: [String] = []) async throws -> FakeAPNs {
        guard let shared = await offThePool({ Self.shared }) else { throw TestFailure("fake-apns --make-key failed") }
        let directory = temporaryDirectory()
        try script.write(toFile: directory + "/script.json", atomically: true, encoding: .utf8)
        let (process, ports) = try await FakeProcess.launch(tool, [
            "--cert-dir", shared, "--auth-key", shared + "/apns-key.pub.pem", "--team-id", teamId, "--key-id", keyId, "--topic", topic,
            "--script", directory + "/script.json", "--log", directory + "/log.jsonl", "--stall-seconds", "30"] + options, readyFile: directory + "/ready.json")
        guard let production = ports["production"]?.exactInt64, let sandbox = ports["sandbox"]?.exactInt64 else {
            await FakeProcess.stop(process)
            throw TestFailure("fake-apns's ready file has no ports")
        }
        return FakeAPNs(directory: directory, productionPort: Int(production), sandboxPort: Int(sandbox), process: process)
    }

    package func stop() async { await FakeProcess.stop(process) }

    package func tokens() throws -> ProviderTokens {
        try ProviderTokens(key: ProviderKey(contentsOf: Self.shared! + "/apns-key.p8"), teamId: Self.teamId, keyId: Self.keyId)
    }

    package func configuration(timeout: Duration = .seconds(5)) -> APNsClientConfiguration {
        APNsClientConfiguration(productionURL: "https://127.0.0.1:\(productionPort)", sandboxURL: "https://127.0.0.1:\(sandboxPort)",
                                caFile: caFile, requestTimeout: timeout)
    }

    /// The log's records; the fake flushes it every 50 ms, so this waits
    /// until `count` records are there (or 5 s pass).
    package func log(count: Int) async throws -> [JSONObject] {
        var records: [JSONObject] = []
        for _ in 0..<100 {
            records = FakeProcess.records(logFile)
            if records.count >= count { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        return records
    }
}
