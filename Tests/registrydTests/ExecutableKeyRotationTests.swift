import Foundation
import Glibc
import RegistrydTestSupport
import Testing

/// `registryd rotate-token-key` beside a running server, as an operator
/// runs it: never losing a token, and saying what stopped it.
extension ExecutableTests {
    private func jwt(_ user: String, in directory: String) async throws -> String {
        let (status, minted, errors) = try await run(["mint-token", "--user", user], in: directory)
        try #require(status == 0, "\(errors)")
        return minted.trimmingCharacters(in: .newlines)
    }

    private func apiKey(in directory: String) throws -> String {
        try String(contentsOfFile: directory + "/registry-data/secrets/internal-api.key", encoding: .utf8)
            .trimmingCharacters(in: .newlines)
    }

    private static func token(_ n: Int) -> String { String(repeating: String(format: "%02x", n), count: 32) }

    private func register(_ port: Int, _ device: String, token n: Int, bearer: String) async throws -> Int {
        try await request("POST", port, "/v1/devices", bearer: bearer,
                          body: #"{"deviceId":"\#(device)","pushToken":"\#(Self.token(n))"}"#).0
    }

    private func senderTokens(_ port: Int, in directory: String) async throws -> String {
        try await request("GET", port, "/internal/v1/users/alice/devices", bearer: try apiKey(in: directory)).1
    }

    /// The server runs as its own user (systemd's DynamicUser); the operator
    /// rotates as root. The new key file keeps the server's ownership and
    /// mode, the server loads it, and after the rotation and a restart
    /// every token still opens.
    @Test(.enabled(if: geteuid() == 0, "runs the server as another user"))
    func aRotationAsRootBesideAServerRunningAsAnotherUserLosesNothing() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.setAttributes([.ownerAccountID: 65534, .groupOwnerAccountID: 65534], ofItemAtPath: directory)
        let asNobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        let server = try await Server(arguments: [], directory: directory, launcher: asNobody)
        try #require(server.port > 0, "\(server.log)")
        let alice = try await jwt("alice", in: directory)
        for n in 0..<5 { #expect(try await register(server.port, "d\(n)", token: n, bearer: alice) == 201) }

        let (status, stdout, stderr) = try await run(["rotate-token-key"], in: directory)
        #expect(status == 0, "\(stderr)")
        #expect(stdout.hasPrefix("added sealing key 2; every server holds it; re-sealed 5 tokens; retired key 1"), "\(stdout)")
        let keyFile = directory + "/registry-data/secrets/token-keys"
        let attributes = try FileManager.default.attributesOfItem(atPath: keyFile)
        #expect((attributes[.ownerAccountID] as? NSNumber)?.intValue == 65534, "the key file keeps its owner")
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        // The running server reads the re-sealed tokens and seals new ones under key 2.
        #expect(try await register(server.port, "d5", token: 5, bearer: alice) == 201)
        let served = try await senderTokens(server.port, in: directory)
        for n in 0...5 { #expect(served.contains(Self.token(n)), "token \(n): \(served)") }
        #expect(server.stop() == 0)

        let restarted = try await Server(arguments: [], directory: directory, launcher: asNobody)
        defer { _ = restarted.stop() }
        try #require(restarted.port > 0, "\(restarted.log)")
        let again = try await senderTokens(restarted.port, in: directory)
        for n in 0...5 { #expect(again.contains(Self.token(n)), "token \(n) after the restart") }
    }

    /// A server whose key file the rotation does not write (another copy)
    /// never loads the new key: the rotation stops before re-sealing or
    /// retiring anything and names the server; the server refuses writes
    /// that store a token (503) but serves reads. Given the file, it loads
    /// it, and the rotation run again finishes. A second rotation started
    /// meanwhile is refused.
    @Test func aServerThatCannotLoadTheNewKeyStopsTheRotationAndNothingIsLost() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let serverKeys = directory + "/registry-data/secrets/token-keys"
        let server = try await Server(arguments: [], directory: directory)
        defer { _ = server.stop() }
        try #require(server.port > 0, "\(server.log)")
        let alice = try await jwt("alice", in: directory)
        for n in 0..<3 { #expect(try await register(server.port, "d\(n)", token: n, bearer: alice) == 201) }
        let operatorKeys = directory + "/operator-token-keys"
        try FileManager.default.copyItem(atPath: serverKeys, toPath: operatorKeys)
        #expect(chmod(operatorKeys, 0o600) == 0)

        let rotate = ["rotate-token-key", "--token-key-file", operatorKeys, "--server-wait", "3s"]
        // The second rotation starts once the first holds the rotation lock and waits for the server.
        let first = Registryd.process(rotate, in: directory)
        let firstErrors = Pipe()
        first.standardError = firstErrors
        first.standardOutput = FileHandle.nullDevice
        try first.run()
        var stoppedError = ""
        while !stoppedError.contains("waiting for pid") {
            let chunk = firstErrors.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            stoppedError += String(decoding: chunk, as: UTF8.self)
        }
        let (busy, _, busyError) = try await run(rotate, in: directory)
        #expect(busy == 1 && busyError.contains("another rotate-token-key is running on this registry (pid "), "\(busyError)")
        stoppedError += String(decoding: firstErrors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        first.waitUntilExit()
        #expect(first.terminationStatus == 1, "\(stoppedError)")
        #expect(stoppedError.contains("these servers still do not seal under the new key 2: pid \(server.process.processIdentifier) on "),
                "\(stoppedError)")
        let operatorRing = try String(contentsOfFile: operatorKeys, encoding: .utf8)
        #expect(operatorRing.contains("seal 1 ") && operatorRing.contains("seal 2 "), "nothing retired: \(operatorRing)")

        #expect(try await register(server.port, "d0", token: 9, bearer: alice) == 503, "no token sealed under the old key")
        #expect(try await request("DELETE", server.port, "/v1/devices/d2", bearer: alice).0 == 204)
        let served = try await senderTokens(server.port, in: directory)
        #expect(served.contains(Self.token(0)) && served.contains(Self.token(1)) && !served.contains(Self.token(2)))

        try FileManager.default.removeItem(atPath: serverKeys)
        try FileManager.default.copyItem(atPath: operatorKeys, toPath: serverKeys)
        #expect(chmod(serverKeys, 0o600) == 0)
        let (finished, finishedOut, finishedError) = try await run(rotate, in: directory)
        #expect(finished == 0, "\(finishedError)")
        #expect(finishedOut.hasPrefix("resumed the rotation to sealing key 2; every server holds it; re-sealed 2 tokens; retired key 1"),
                "\(finishedOut)")
        #expect(try await register(server.port, "d0", token: 9, bearer: alice) == 200)
        let after = try await senderTokens(server.port, in: directory)
        #expect(after.contains(Self.token(9)) && after.contains(Self.token(1)))
    }
}
