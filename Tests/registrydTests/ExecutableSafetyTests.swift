import Foundation
import Glibc
import RegistrydTestSupport
import Testing

/// What the executable refuses before it writes anything: short secrets, a
/// damaged generated secret, an address it cannot listen on, bad limits.
extension ExecutableTests {
    /// Writes a secret file, private to its owner as serve requires.
    private func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }

    @Test(arguments: ["--jwt-hs256-secret-file", "--internal-api-key-file"])
    func aSecretShorterThan32BytesIsRefusedNamingTheFlag(_ flag: String) async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try write("k\n", to: directory + "/one-byte")
        try write(String(repeating: "k", count: 31) + "\n", to: directory + "/thirty-one")
        for file in ["one-byte", "thirty-one"] {
            let (status, _, stderr) = try await run(["serve", flag, directory + "/" + file], in: directory)
            #expect(status == 2)
            #expect(stderr.contains(flag), "\(stderr)")
            #expect(stderr.contains("at least 32"), "\(stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/registry-data"))
        }
    }

    @Test func aGeneratedSecretLeftEmptyByACrashIsANamedError() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let secrets = directory + "/registry-data/secrets"
        try FileManager.default.createDirectory(atPath: secrets, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: secrets + "/internal-api.key", contents: Data(),
                                               attributes: [.posixPermissions: 0o600]))
        let (status, _, stderr) = try await run(["serve"], in: directory)
        #expect(status == 2)
        #expect(stderr.contains("internal-api.key"), "\(stderr)")
        #expect(stderr.contains("empty"), "\(stderr)")
        #expect(stderr.contains("delete it"), "\(stderr)")
    }

    @Test func anAddressThatCannotBeBoundStopsBeforeSecretsOrDataAreWritten() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPointer in
                bind(fd, sockaddrPointer, length) == 0 && listen(fd, 1) == 0
                    && getsockname(fd, sockaddrPointer, &length) == 0
            }
        }
        try #require(bound)
        let port = UInt16(bigEndian: address.sin_port)
        let (status, _, stderr) = try await run(["serve", "--listen", "127.0.0.1:\(port)"], in: directory)
        #expect(status == 2)
        #expect(stderr.contains("--listen"), "\(stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/registry-data"))
    }

    @Test(arguments: ["0", "1001", "many"])
    func aBadActivityCapIsRefused(_ value: String) async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (status, _, stderr) = try await run(["serve", "--max-activities-per-device", value], in: directory)
        #expect(status == 2)
        #expect(stderr.contains("--max-activities-per-device"), "\(stderr)")
    }
}
