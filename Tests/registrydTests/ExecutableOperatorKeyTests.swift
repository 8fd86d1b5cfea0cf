import Foundation
import Glibc
import RegistrydTestSupport
import Testing

/// `--operator-key-file`: a read-only bearer key, generated in the data
/// directory's `secrets/` (0600) when none is given, as the internal key is.
/// It reads what the console reads and is refused everything else.
@Suite(.serialized) struct ExecutableOperatorKeyTests {
    static let pushToken = String(repeating: "c3", count: 32)

    /// The key in `file`, as a client sends it.
    static func key(_ file: String) throws -> String {
        try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .newlines)
    }

    /// What `operatorKey` gets from the internal routes of a server that holds alice's iPhone.
    static func checkReadOnly(_ operatorKey: String, port: Int, directory: String) async throws {
        let jwt = try await Registryd.mintToken("alice", in: directory)
        let (registered, _) = try await Registryd.request("POST", port, "/v1/devices", bearer: jwt,
                                                          body: #"{"deviceId": "iphone", "pushToken": "\#(pushToken)"}"#)
        #expect(registered == 201)
        for path in ["/internal/v1/stats", "/internal/v1/users/alice/history", "/internal/v1/users/alice/devices?view=operator",
                     "/internal/v1/removals", "/internal/v1/activities/m1/token-counts"] {
            let (status, body) = try await Registryd.request("GET", port, path, bearer: operatorKey)
            #expect(status == 200, "\(path): \(body)")
            #expect(!body.contains(pushToken), "\(path)")
        }
        let refused: [(String, String, String?)] = [
            ("GET", "/internal/v1/users/alice/devices", nil), ("GET", "/internal/v1/activities/m1/tokens", nil),
            ("POST", "/internal/v1/users/lookup", #"{"userIds": ["alice"]}"#), ("POST", "/internal/v1/sweep", "{}"),
            ("POST", "/internal/v1/feedback", #"{"token": "\#(pushToken)", "reason": "Unregistered"}"#),
            ("GET", "/metrics", nil), ("GET", "/v1/devices", nil),
        ]
        for (method, path, body) in refused {
            let (status, text) = try await Registryd.request(method, port, path, bearer: operatorKey, body: body)
            #expect(status == 403 && text.contains(#""code":"forbidden""#), "\(method) \(path): \(status) \(text)")
        }
        let internalKey = try key(directory + "/registry-data/secrets/internal-api.key")
        let (devices, held) = try await Registryd.request("GET", port, "/internal/v1/users/alice/devices", bearer: internalKey)
        #expect(devices == 200 && held.contains(pushToken), "the feedback was refused, so the token is still held")
    }

    @Test func serveGeneratesAReadOnlyOperatorKeyBesideTheInternalOne() async throws {
        let directory = try Registryd.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try await RegistrydServer(arguments: [], directory: directory)
        defer { if server.process.isRunning { _ = server.stop() } }
        try #require(server.port > 0, "\(server.log)")
        let file = directory + "/registry-data/secrets/operator.key"
        var status = stat()
        #expect(stat(file, &status) == 0 && status.st_mode & 0o777 == 0o600)
        let key = try Self.key(file)
        let internalKey = try Self.key(directory + "/registry-data/secrets/internal-api.key")
        #expect(key.count == 64 && key != internalKey)
        try await Self.checkReadOnly(key, port: server.port, directory: directory)
        #expect(server.stop() == 0)
        #expect(server.log.contains(#""kind":"operator-key""#) && server.log.contains("operator.key"), "its path is logged")
        #expect(!server.log.contains(key), "never the key")
    }

    @Test(arguments: [true, false])
    func theOperatorKeyFileIsUsedFromTheFlagOrItsVariable(_ asFlag: Bool) async throws {
        let directory = try Registryd.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/on-call.key"
        try (String(repeating: "0f", count: 24) + "\n").write(toFile: file, atomically: false, encoding: .utf8)
        #expect(chmod(file, 0o600) == 0)
        let server = try await RegistrydServer(arguments: asFlag ? ["--operator-key-file", file] : [], directory: directory,
                                               environment: asFlag ? [:] : ["REGISTRY_OPERATOR_KEY_FILE": file])
        defer { if server.process.isRunning { _ = server.stop() } }
        try #require(server.port > 0, "\(server.log)")
        try await Self.checkReadOnly(String(repeating: "0f", count: 24), port: server.port, directory: directory)
        #expect(!FileManager.default.fileExists(atPath: directory + "/registry-data/secrets/operator.key"), "none is generated")
        #expect(server.stop() == 0)
    }

    @Test func aBadOperatorKeyFileIsRefusedNamingTheFlag() async throws {
        let directory = try Registryd.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let short = directory + "/short.key", same = directory + "/same.key"
        try "too short\n".write(toFile: short, atomically: false, encoding: .utf8)
        try (String(repeating: "ab", count: 32) + "\n").write(toFile: same, atomically: false, encoding: .utf8)
        #expect(chmod(short, 0o600) == 0 && chmod(same, 0o600) == 0)
        for (arguments, expected) in [(["--operator-key-file", short], "at least 32"),
                                      (["--operator-key-file", directory + "/absent.key"], "cannot read"),
                                      (["--operator-key-file", ""], "must not be empty"),
                                      (["--operator-key-file", same, "--internal-api-key-file", same], "a key of its own")] {
            let (status, _, errors) = try await Registryd.run(["serve", "--listen", "127.0.0.1:0"] + arguments, in: directory)
            #expect(status == 2, "\(arguments): \(errors)")
            #expect(errors.contains("--operator-key-file") && errors.contains(expected), "\(arguments): \(errors)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/registry-data/lmdb"), "no registry is made")
        }
    }

    @Test func helpListsTheOperatorKeyFile() async throws {
        let (status, help, _) = try await Registryd.run(["help", "serve"], in: FileManager.default.currentDirectoryPath)
        #expect(status == 0)
        #expect(help.contains("\n  --operator-key-file F\n      "), "\(help)")
        #expect(help.contains("env: REGISTRY_OPERATOR_KEY_FILE\n"))
    }
}
