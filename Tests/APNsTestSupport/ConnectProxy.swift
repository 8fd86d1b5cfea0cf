import Foundation
import JSON
import RegistrydTestSupport

/// A running `tools/connect-proxy`: an HTTP CONNECT proxy on 127.0.0.1
/// that logs every target it is asked for, so a test sees whether provider
/// connections went through it. Optionally it requires Basic credentials,
/// or speaks TLS itself (an `https://` proxy, with the fakes' certificate).
///
/// `@unchecked Sendable`: one test owns it; the process handle is only
/// touched by `start` and `stop`.
package final class ConnectProxy: Stoppable, @unchecked Sendable {
    package static let tool = FakeAPNs.repositoryRoot + "/tools/connect-proxy"

    package let directory: String
    package let port: Int
    private let process: Process

    private init(directory: String, port: Int, process: Process) {
        self.directory = directory
        self.port = port
        self.process = process
    }

    /// Starts the proxy; with `credentials`, a CONNECT without them gets
    /// 407; with `tls`, it listens with `FakeAPNs.shared`'s certificate.
    package static func start(credentials: (user: String, password: String)? = nil, tls: Bool = false) async throws -> ConnectProxy {
        let directory = temporaryDirectory()
        var arguments = ["--log", directory + "/log.jsonl"]
        if let credentials { arguments += ["--user", credentials.user, "--password", credentials.password] }
        if tls {
            guard let shared = await offThePool({ FakeAPNs.shared }) else { throw TestFailure("fake-apns --make-key failed") }
            arguments += ["--tls-cert-dir", shared]
        }
        let (process, ready) = try await FakeProcess.launch(tool, arguments, readyFile: directory + "/ready.json")
        guard let port = ready["port"]?.exactInt64 else {
            await FakeProcess.stop(process)
            throw TestFailure("connect-proxy's ready file has no port")
        }
        return ConnectProxy(directory: directory, port: Int(port), process: process)
    }

    package func stop() async { await FakeProcess.stop(process) }

    /// `http://127.0.0.1:PORT` (or `https://` for a TLS proxy), for a flag or a variable.
    package func url(tls: Bool = false) -> String { "\(tls ? "https" : "http")://127.0.0.1:\(port)" }

    /// One request the proxy answered.
    package struct Request: Sendable, Equatable, CustomStringConvertible {
        package let method: String
        /// `host:port`.
        package let target: String
        /// The user of the Basic credentials it was given, if any.
        package let user: String?
        package let status: Int

        package var description: String { "\(method) \(target) user=\(user ?? "-") → \(status)" }
    }

    /// What it was asked, in order (the proxy writes each record at once).
    package var requests: [Request] {
        FakeProcess.records(directory + "/log.jsonl").compactMap { record in
            guard case .string(let method)? = record["method"], case .string(let target)? = record["target"],
                  let status = record["status"]?.exactInt64 else { return nil }
            let user: String? = if case .string(let name)? = record["user"] { name } else { nil }
            return Request(method: method, target: target, user: user, status: Int(status))
        }
    }
}
