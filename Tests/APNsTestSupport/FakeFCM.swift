import Foundation
import Glibc
import JSON
import RegistrydTestSupport

/// A running `tools/fake-fcm` (Python, h2): FCM's HTTP v1 send and Google's
/// OAuth 2.0 token endpoint on one port, with its own script and log, and
/// what a client needs to use it (the CA to trust, the service-account
/// file, the URLs).
///
/// The fake's certificates live in `FakeAPNs.shared`'s directory, so one
/// `ca.pem` is trusted by both fakes' clients. The service account
/// (`service-account.json`, project `projectId`) is made there once per
/// test process. The script format is `tools/fakefcm/script.py`'s; the log's
/// records are described in docs/tools.md ("The fake FCM").
///
/// `@unchecked Sendable`: one test owns it; the process handle is only
/// touched by `start` and `stop`.
package final class FakeFCM: Stoppable, @unchecked Sendable {
    package static let tool = FakeAPNs.repositoryRoot + "/tools/fake-fcm"
    package static let projectId = "registry-test"
    package static let clientEmail = "registryd@registry-test.iam.gserviceaccount.com"

    /// Whether the fake can run here: Debian's python3 with h2 and cryptography (as for FakeAPNs).
    package static let available: Bool = FakeAPNs.available

    /// `FakeAPNs.shared`'s directory (the CA, made by whichever fake starts
    /// first), holding a service account made once per test process; `nil`
    /// when either could not be made.
    package static let shared: String? = {
        guard let directory = FakeAPNs.shared else { return nil }
        let made = shell(["/usr/bin/python3", tool, "--make-service-account", directory,
                          "--project-id", projectId, "--client-email", clientEmail])
        return made == nil ? nil : directory
    }()

    /// This run's folder: script.json, log.jsonl, ready.json.
    package let directory: String
    package let port: Int
    private let process: Process

    private init(directory: String, port: Int, process: Process) {
        self.directory = directory
        self.port = port
        self.process = process
    }

    /// The CA to trust (the same file as FakeAPNs' `caFile`).
    package var caFile: String { Self.shared! + "/ca.pem" }
    /// The Google service-account JSON (mode 0600) whose assertions the fake accepts.
    package var serviceAccountFile: String { Self.shared! + "/service-account.json" }
    package var projectId: String { Self.projectId }
    package var logFile: String { directory + "/log.jsonl" }
    /// What `--fcm-url` takes.
    package var baseURL: String { "https://127.0.0.1:\(port)" }
    /// What `--fcm-token-url` takes (the file's `token_uri` is Google's).
    package var tokenURL: String { baseURL + "/token" }

    /// Starts the fake with `script` (`{"tokens": {TOKEN: [ANSWER, ...]},
    /// "token_endpoint": [ANSWER, ...]}`) and waits until it listens.
    /// Access tokens live `tokenLifetime` seconds; a stalled request is
    /// dropped after 30 s.
    package static func start(script: String = "{}", tokenLifetime: Int = 3600) async throws -> FakeFCM {
        guard let shared = await offThePool({ Self.shared }) else {
            throw TestFailure("fake-fcm --make-service-account (or fake-apns --make-key) failed")
        }
        let directory = temporaryDirectory()
        try script.write(toFile: directory + "/script.json", atomically: true, encoding: .utf8)
        let (process, ready) = try await FakeProcess.launch(tool, [
            "--cert-dir", shared, "--service-account", shared + "/service-account.json", "--script", directory + "/script.json",
            "--log", directory + "/log.jsonl", "--token-lifetime", String(tokenLifetime), "--stall-seconds", "30"],
            readyFile: directory + "/ready.json")
        guard let port = ready["port"]?.exactInt64 else {
            await FakeProcess.stop(process)
            throw TestFailure("fake-fcm's ready file has no port")
        }
        return FakeFCM(directory: directory, port: Int(port), process: process)
    }

    package func stop() async { await FakeProcess.stop(process) }

    /// The log's records (`"endpoint"`: `"send"`, `"token"` or `"other"`),
    /// only those of `endpoint` when given. The fake flushes its log every
    /// 50 ms, so this waits until `count` such records are there (or 5 s pass).
    package func log(count: Int, endpoint: String? = nil) async throws -> [JSONObject] {
        var records: [JSONObject] = []
        for _ in 0..<100 {
            records = FakeProcess.records(logFile).filter { endpoint == nil || $0["endpoint"] == .string(endpoint!) }
            if records.count >= count { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        return records
    }
}
