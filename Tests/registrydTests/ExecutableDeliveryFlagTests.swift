import APNsTestSupport
import Foundation
import RegistrydTestSupport
import Testing

/// `serve`'s `--apns-*` flags: a half-configured or misconfigured sender
/// stops serve at start (exit 2, naming the flag) before anything is
/// written, rather than run with delivery silently off.
@Suite(.serialized) struct ExecutableDeliveryFlagTests {
    /// Every delivery flag but the key file, valid.
    static let rest = ["--apns-key-id", FakeAPNs.keyId, "--apns-team-id", FakeAPNs.teamId,
                       "--apns-topic", "default=\(FakeAPNs.topic)", "--listen", "127.0.0.1:0"]

    func refused(_ arguments: [String], naming flag: String, files: [String: String] = [:]) async throws {
        let directory = try Registryd.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for (name, content) in files {
            try content.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: directory + "/" + name)
        }
        let (status, _, errors) = try await Registryd.run(["serve"] + arguments, in: directory)
        #expect(status == 2, "\(errors)")
        #expect(errors.contains(flag), "\(errors)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/registry-data"),
                "nothing is written before the flags are known to be good")
    }

    @Test func aKeyFileThatIsNotAP256KeyIsRefused() async throws {
        let rsa = try #require(await offThePool { shell(["openssl", "genrsa", "2048"]) }, "openssl genrsa")
        try await refused(["--apns-key-file", "rsa.pem"] + Self.rest, naming: "--apns-key-file",
                          files: ["rsa.pem": String(decoding: rsa, as: UTF8.self)])
        try await refused(["--apns-key-file", "garbage.p8"] + Self.rest, naming: "--apns-key-file",
                          files: ["garbage.p8": "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n"])
        try await refused(["--apns-key-file", "absent.p8"] + Self.rest, naming: "--apns-key-file")
    }

    @Test func anAPNsFlagWithoutAKeyIsRefused() async throws {
        try await refused(["--apns-topic", "default=com.example.app", "--listen", "127.0.0.1:0"], naming: "--apns-topic")
        try await refused(["--apns-ca-file", "ca.pem", "--listen", "127.0.0.1:0"], naming: "--apns-ca-file")
    }

    @Test(.enabled(if: FakeAPNs.available, DeliveryServing.skipReason))
    func aKeyWithoutItsIdsOrTopicIsRefused() async throws {
        let key = try #require(await offThePool { FakeAPNs.shared }) + "/apns-key.p8"
        let teamAndTopic = ["--apns-team-id", FakeAPNs.teamId, "--apns-topic", "default=com.example.app", "--listen", "127.0.0.1:0"]
        try await refused(["--apns-key-file", key] + teamAndTopic, naming: "--apns-key-id")
        try await refused(["--apns-key-file", key, "--apns-key-id", "SHORT"] + teamAndTopic, naming: "--apns-key-id")
        try await refused(["--apns-key-file", key, "--apns-key-id", FakeAPNs.keyId, "--apns-topic", "default=com.example.app",
                           "--listen", "127.0.0.1:0"], naming: "--apns-team-id")
        try await refused(["--apns-key-file", key, "--apns-key-id", FakeAPNs.keyId, "--apns-team-id", FakeAPNs.teamId,
                           "--listen", "127.0.0.1:0"], naming: "--apns-topic")
        try await refused(["--apns-key-file", key] + Self.rest + ["--apns-production-url", "http://127.0.0.1:1"],
                          naming: "--apns-production-url")
        try await refused(["--apns-key-file", key] + Self.rest + ["--apns-sandbox-key-id", FakeAPNs.keyId],
                          naming: "--apns-sandbox-key-file")
        try await refused(["--apns-key-file", key] + Self.rest + ["--apns-sandbox-key-file", key], naming: "--apns-sandbox-key-id")
        try await refused(["--apns-key-file", key] + Self.rest + ["--apns-sandbox-key-file", "absent.p8", "--apns-sandbox-key-id",
                           FakeAPNs.keyId], naming: "--apns-sandbox-key-file")
        try await refused(["--apns-key-file", key] + Self.rest + ["--apns-ping-interval", "0s"], naming: "--apns-ping-interval")
    }
}
