import APNsTestSupport
import FCM
import Foundation
import JWT
import RegistrydTestSupport
import Testing

/// Google service-account files as `ServiceAccount` loads them: a real one
/// made by `tools/fake-fcm --make-service-account`, and the files it must
/// refuse at start, each refusal naming the file.
@Suite(.enabled(if: FakeFCM.available, "needs /usr/bin/python3 with h2 and cryptography (tools/install-deps --test)"))
struct ServiceAccountTests {
    /// A fresh directory holding a service account of project `registry-test`.
    static func made() async throws -> String {
        let directory = temporaryDirectory()
        let made = await offThePool {
            shell(["/usr/bin/python3", FakeFCM.tool, "--make-service-account", directory]) != nil
        }
        try #require(made, "tools/fake-fcm --make-service-account failed")
        return directory
    }

    /// The made file's members, to write variants of it.
    static func members(in directory: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/service-account.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// Writes `text` to `directory/name` with `mode`; its path.
    static func write(_ text: String, _ directory: String, _ name: String, mode: Int = 0o600) throws -> String {
        let path = directory + "/" + name
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    static func write(_ members: [String: Any], _ directory: String, _ name: String, mode: Int = 0o600) throws -> String {
        let data = try JSONSerialization.data(withJSONObject: members, options: [.prettyPrinted, .sortedKeys])
        return try write(String(decoding: data, as: UTF8.self), directory, name, mode: mode)
    }

    /// The message `ServiceAccount(contentsOf:)` refuses `path` with, or `nil` when it loads.
    static func refusal(_ path: String) -> String? {
        do {
            _ = try ServiceAccount(contentsOf: path)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func aRealServiceAccountLoads() async throws {
        let directory = try await Self.made()
        let path = directory + "/service-account.json"
        let account = try ServiceAccount(contentsOf: path)
        #expect(account.projectId == "registry-test")
        #expect(account.clientEmail == "registryd@registry-test.iam.gserviceaccount.com")
        #expect(account.key.algorithm == .rs256 && account.source == path)
        #expect(account.tokenURI == "https://oauth2.googleapis.com/token")
        #expect(account.privateKeyId.count == 40 && account.privateKeyId.allSatisfy(\.isHexDigit))
    }

    @Test func aFileThatIsNotJSONIsRefusedByName() async throws {
        let path = try Self.write("project_id = registry-test\n", try await Self.made(), "not-json.json")
        let message = try #require(Self.refusal(path))
        #expect(message.contains(path) && message.contains("not a Google service-account file"), "\(message)")
    }

    @Test func aFileWithoutItsPrivateKeyIsRefusedByName() async throws {
        let directory = try await Self.made()
        var members = try Self.members(in: directory)
        members["private_key"] = nil
        let path = try Self.write(members, directory, "no-key.json")
        let message = try #require(Self.refusal(path))
        #expect(message.contains(path) && message.contains("private_key is missing"), "\(message)")
    }

    @Test func anotherKindOfCredentialIsRefusedByName() async throws {
        let directory = try await Self.made()
        var members = try Self.members(in: directory)
        members["type"] = "authorized_user"
        let path = try Self.write(members, directory, "user.json")
        let message = try #require(Self.refusal(path))
        #expect(message.contains(path) && message.contains("type is not service_account"), "\(message)")
    }

    @Test func anECPrivateKeyIsRefusedByName() async throws {
        let directory = try await Self.made()
        let pem = await offThePool {
            shell(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])
        }
        let ecKey = String(decoding: try #require(pem, "openssl genpkey failed"), as: UTF8.self)
        try #require(ecKey.contains("-----BEGIN PRIVATE KEY-----"))
        var members = try Self.members(in: directory)
        members["private_key"] = ecKey
        let path = try Self.write(members, directory, "ec.json")
        let message = try #require(Self.refusal(path))
        #expect(message.contains(path) && message.contains("not an RSA key"), "\(message)")
    }

    @Test func aFileOthersCanReadIsRefusedWithTheChmodThatFixesIt() async throws {
        let directory = try await Self.made()
        let readable = directory + "/readable.json"
        try FileManager.default.copyItem(atPath: directory + "/service-account.json", toPath: readable)
        for mode in [0o644, 0o640, 0o604] {
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: readable)
            let message = try #require(Self.refusal(readable), "mode \(String(mode, radix: 8)) was accepted")
            #expect(message.contains("chmod 600 \(readable)") && message.contains(String(mode, radix: 8)), "\(message)")
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: readable)
        #expect(Self.refusal(readable) == nil)
    }

    @Test func aMissingFileIsRefusedByName() {
        let path = temporaryDirectory() + "/absent.json"
        let message = Self.refusal(path)
        #expect(message == "cannot read the service-account file \(path)")
    }
}

/// Token URLs: `https://host[:port]/path` split into origin and path, anything else refused.
@Suite struct TokenURLTests {
    @Test func anHTTPSURLIsSplitIntoOriginAndPath() throws {
        let google = try TokenURL.parse("https://oauth2.googleapis.com/token").get()
        #expect(google.origin == "https://oauth2.googleapis.com" && google.path == "/token"
                && google.url == "https://oauth2.googleapis.com/token")
        let local = try TokenURL.parse("https://127.0.0.1:8443/oauth/token?x=1").get()
        #expect(local.origin == "https://127.0.0.1:8443" && local.path == "/oauth/token?x=1")
        #expect(try TokenURL.parse("https://example.com").get().path == "/")
    }

    @Test func plainHTTPIsRefused() {
        guard case .failure(let error) = TokenURL.parse("http://oauth2.googleapis.com/token") else {
            Issue.record("http:// was accepted")
            return
        }
        #expect(error.message.contains("http://oauth2.googleapis.com/token") && error.message.contains("https"))
    }

    @Test func aURLWithoutAHostIsRefused() {
        for url in ["https:///token", "https://"] {
            guard case .failure(let error) = TokenURL.parse(url) else {
                Issue.record("\(url) was accepted")
                continue
            }
            #expect(error.message.contains("no host"), "\(error.message)")
        }
    }
}
