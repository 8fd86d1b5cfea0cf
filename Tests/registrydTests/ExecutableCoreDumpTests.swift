import Foundation
import Glibc
import RegistrydTestSupport
import Testing

/// A core dump of the server would hold the token keys, the JWT secret and
/// the internal API key, so the running process must be unable to leave one
/// whatever limit it was started with.
extension ExecutableTests {
    /// Started with a core size limit it could use (raised by `prlimit`), and
    /// as another user than root when the test runs as root (`setpriv`):
    /// the files in `/proc/<pid>` belong to the process's user while it is
    /// dumpable and to root once it is not, which is how the kernel shows
    /// the flag (the directory itself may keep its first owner).
    @Test func theServerCannotDumpCore() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var launcher = ["/usr/bin/prlimit", "--core=\(Self.raisableCoreLimit)", "--"]
        var user = Int(geteuid())
        if user == 0 {
            user = 65534
            try FileManager.default.setAttributes([.ownerAccountID: user, .groupOwnerAccountID: user], ofItemAtPath: directory)
            launcher += ["/usr/bin/setpriv", "--reuid=\(user)", "--regid=\(user)", "--clear-groups"]
        }
        let server = try await Server(arguments: [], directory: directory, launcher: launcher)
        defer { _ = server.stop() }
        try #require(server.port > 0, "log: \(server.log)")
        let proc = "/proc/\(server.process.processIdentifier)"

        let status = try String(contentsOfFile: proc + "/status", encoding: .utf8)
        #expect(status.contains("\nUid:\t\(user)\t"), "runs as \(user): \(status)")
        let limits = try String(contentsOfFile: proc + "/limits", encoding: .utf8)
        let core = limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") }
        #expect(core?.split(separator: " ") == ["Max", "core", "file", "size", "0", "0", "bytes"], "\(limits)")
        let owner = try FileManager.default.attributesOfItem(atPath: proc + "/status")[.ownerAccountID] as? NSNumber
        #expect(owner?.intValue == 0, "\(proc)/status belongs to \(owner.map { "\($0)" } ?? "?"): the process is dumpable")
    }

    /// The largest core limit the server may be given: any as root, else
    /// this process's hard limit.
    private static var raisableCoreLimit: String {
        var limit = rlimit()
        guard geteuid() != 0, getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit) == 0,
              limit.rlim_max != rlim_t.max else { return "unlimited" }
        return "\(limit.rlim_max)"
    }
}
