import Foundation
import Glibc
import JSON
import RegistrydTestSupport

/// A fake provider (`tools/fake-apns`, `tools/fake-fcm`) as a child
/// process: started with python3, ready once it wrote its ready file (a
/// JSON object with its ports), stopped with SIGTERM.
package enum FakeProcess {
    /// Runs `/usr/bin/python3 tool arguments… --ready-file readyFile` and
    /// waits up to 10 s for the ready file; its object and the process.
    static func launch(_ tool: String, _ arguments: [String], readyFile: String) async throws -> (Process, JSONObject) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [tool] + arguments + ["--ready-file", readyFile]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<200 {
            if let data = FileManager.default.contents(atPath: readyFile), case .object(let ready)? = try? JSONParser.parse([UInt8](data)) {
                return (process, ready)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        kill(process.processIdentifier, SIGKILL)
        throw TestFailure("\(URL(fileURLWithPath: tool).lastPathComponent) did not become ready")
    }

    /// SIGTERM (the fake unblocks it, whatever mask it inherited: it
    /// flushes its log and exits), then SIGKILL if it is still there after 5 s.
    static func stop(_ process: Process) async {
        kill(process.processIdentifier, SIGTERM)
        for _ in 0..<250 where process.isRunning {
            try? await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        await offThePool { process.waitUntilExit() }
    }

    /// The JSON lines of `file` as they are on disk now (a fake flushes its log every 50 ms).
    static func records(_ file: String) -> [JSONObject] {
        let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            if case .object(let object)? = try? JSONParser.parse(Array(line.utf8)) { object } else { nil }
        }
    }
}

/// Something a test starts and must stop whatever happens (a fake is a
/// child process, a harness holds one).
package protocol Stoppable {
    func stop() async
}

/// Runs `body` with `resource`, then stops it, also when `body` throws.
package func stopping<Resource: Stoppable>(_ resource: Resource, _ body: (Resource) async throws -> Void) async throws {
    do {
        try await body(resource)
    } catch {
        await resource.stop()
        throw error
    }
    await resource.stop()
}

/// A test's own failure, with what went wrong.
package struct TestFailure: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
