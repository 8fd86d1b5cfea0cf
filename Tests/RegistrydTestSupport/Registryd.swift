import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The built `registryd`, run as a user runs it: the one way every test
/// suite starts it (a command to completion, or `RegistrydServer`), finds
/// its port and talks HTTP to it.
package enum Registryd {
    /// `registryd` sits next to the test bundle in SwiftPM's build directory.
    package static let binary: String = {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while url.path != "/" {
            let candidate = url.appendingPathComponent("registryd").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            url.deleteLastPathComponent()
        }
        return "registryd"
    }()

    /// A new empty directory under the system's temporary directory.
    package static func makeDirectory(_ prefix: String = "registryd-exe") throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// The environment a `registryd` under test runs with: `extra`, a plain
    /// PATH, and the sanitizer options of this process (tools/sanitize sets
    /// them; a child without them reports the suppressed false positives).
    /// No other variable leaks in: a test's `REGISTRY_*` settings are its own.
    package static func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ["PATH": "/usr/bin:/bin"]
        for name in ["TSAN_OPTIONS", "ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"] {
            if let value = ProcessInfo.processInfo.environment[name] { environment[name] = value }
        }
        return environment.merging(extra) { _, mine in mine }
    }

    /// A `registryd` process with `arguments`, in `directory`, with
    /// `environment(extra)`; not started.
    package static func process(_ arguments: [String], in directory: String, environment extra: [String: String] = [:],
                                launcher: [String] = []) -> Process {
        let command = launcher + [binary] + arguments
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.environment = environment(extra)
        return process
    }

    /// Runs `registryd` to completion (killed after 20 s, so a command that
    /// wrongly starts serving fails the test instead of hanging it), off the
    /// cooperative pool; returns status, stdout, stderr.
    package static func run(_ arguments: [String], in directory: String,
                            environment extra: [String: String] = [:]) async throws -> (Int32, String, String) {
        let process = process(arguments, in: directory, environment: extra)
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        return await offThePool {
            let watchdog = DispatchWorkItem { [process] in if process.isRunning { process.terminate() } }
            DispatchQueue.global().asyncAfter(deadline: .now() + 20, execute: watchdog)
            defer { watchdog.cancel() }
            let stdout = out.fileHandleForReading.readDataToEndOfFile()
            let stderr = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
        }
    }

    /// A device JWT for `user` from `registryd mint-token` (with `flags`, e.g. `--data-dir`).
    package static func mintToken(_ user: String, in directory: String, _ flags: [String] = []) async throws -> String {
        let (status, minted, errors) = try await run(["mint-token", "--user", user] + flags, in: directory)
        guard status == 0 else { throw Failure(description: "registryd mint-token: \(errors)") }
        return minted.trimmingCharacters(in: .newlines)
    }

    /// One HTTP request to 127.0.0.1:`port`; status and body.
    package static func request(_ method: String, _ port: Int, _ path: String, bearer: String? = nil,
                                body: String? = nil) async throws -> (Int, String) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body.utf8)
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    package struct Failure: Error, CustomStringConvertible {
        package var description: String

        package init(description: String) { self.description = description }
    }
}

/// `registryd serve` on 127.0.0.1 and a port the kernel picks, running
/// until `stop()`; its port is read from its `listening` log line.
package final class RegistrydServer: Sendable {
    package let process: Process
    package let port: Int
    private let stderr: Pipe
    private let logText: Mutex<String>
    /// Signalled once the stderr reader has seen the end of the pipe.
    private let readerDone = DispatchSemaphore(value: 0)

    /// Starts `serve --listen 127.0.0.1:0` plus `arguments` and waits (up to
    /// 20 s, off the cooperative pool) for its port. `launcher`, when given,
    /// is a command that execs `registryd` (`prlimit … --`, `setpriv …`), so
    /// the process is still the server. A server that did not start has
    /// port 0 and its log.
    package init(arguments: [String], directory: String, environment: [String: String] = [:],
                 launcher: [String] = []) async throws {
        let errors = Pipe()
        stderr = errors
        process = Registryd.process(["serve", "--listen", "127.0.0.1:0"] + arguments, in: directory,
                                    environment: environment, launcher: launcher)
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let (port, log) = await offThePool { () -> (Int, String) in
            var log = "", port = 0
            let deadline = Date().addingTimeInterval(20)
            while port == 0, Date() < deadline {
                let chunk = errors.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                log += String(decoding: chunk, as: UTF8.self)
                if let range = log.range(of: #""address":"127.0.0.1:"#) {
                    port = Int(log[range.upperBound...].prefix(while: \.isNumber)) ?? 0
                }
            }
            return (port, log)
        }
        self.port = port
        logText = Mutex(log)
        // Keep reading after the port: a server that logs much (one line per failed delivery)
        // would otherwise fill the pipe and block on its next log line.
        let reader = Thread { [self] in
            while case let chunk = errors.fileHandleForReading.availableData, !chunk.isEmpty {
                logText.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
            }
            readerDone.signal()
        }
        reader.start()
    }

    /// What the server wrote to stderr so far (all of it once stopped).
    package var log: String { logText.withLock { $0 } }

    /// SIGTERM; waits for the exit and returns its status (the rest of the log is read).
    package func stop() -> Int32 {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        readerDone.wait()
        readerDone.signal()
        return process.terminationStatus
    }
}
