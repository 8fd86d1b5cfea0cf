import Foundation
import RegistrydTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The built `registryd` binary, run as a user would: no flags, real
/// sockets, signals. These pin the executable's contract (flags, generated
/// secrets, mint-token, clean shutdown), not the routes (see the router tests).
@Suite(.serialized) struct ExecutableTests {
    typealias Server = RegistrydServer

    static var binary: String { Registryd.binary }

    func makeDirectory() throws -> String { try Registryd.makeDirectory() }

    /// `Registryd.run`: to completion, killed after 20 s.
    func run(_ arguments: [String], in directory: String, environment: [String: String] = [:]) async throws -> (Int32, String, String) {
        try await Registryd.run(arguments, in: directory, environment: environment)
    }

    func request(_ method: String, _ port: Int, _ path: String, bearer: String? = nil,
                 body: String? = nil) async throws -> (Int, String) {
        try await Registryd.request(method, port, path, bearer: bearer, body: body)
    }

    @Test func servesWithNoFlagsAndStopsCleanlyOnSIGTERM() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try await Server(arguments: [], directory: directory)
        #expect(server.port > 0, "log: \(server.log)")
        let secrets = directory + "/registry-data/secrets"
        for name in ["jwt-hs256.secret", "internal-api.key"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: secrets + "/" + name)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600, "\(name)")
        }
        let health = try await request("GET", server.port, "/healthz")
        #expect(health.0 == 200)
        #expect(health.1 == #"{"status":"ok"}"#)

        let (minted, jwt, _) = try await run(["mint-token", "--user", "alice"], in: directory)
        #expect(minted == 0)
        let token = jwt.trimmingCharacters(in: .whitespacesAndNewlines)
        let created = try await request("POST", server.port, "/v1/devices", bearer: token,
                                        body: #"{"deviceId": "d1", "pushToken": "\#(String(repeating: "ab", count: 32))"}"#)
        #expect(created.0 == 201)
        let apiKey = try String(contentsOfFile: secrets + "/internal-api.key", encoding: .utf8)
            .trimmingCharacters(in: .newlines)
        let sender = try await request("GET", server.port, "/internal/v1/users/alice/devices", bearer: apiKey)
        #expect(sender.1.contains(String(repeating: "ab", count: 32)))
        #expect(server.stop() == 0)
        #expect(server.log.contains(#""event":"stopped""#))
        #expect(!server.log.contains(apiKey))
        #expect(!server.log.contains(String(repeating: "ab", count: 32)))

        let (statsStatus, stats, _) = try await run(["stats", "--json"], in: directory)
        #expect(statsStatus == 0)
        #expect(stats.contains(#""counts":{"devices":1,"#))
    }

    @Test(arguments: [
        (["--device-ttl", "0"], "--device-ttl"),
        (["--sweep-interval", "5x"], "--sweep-interval"),
        (["--listen", "nowhere"], "--listen"),
        (["--max-devices-per-user", "-3"], "--max-devices-per-user"),
        (["--jwt-jwks-file", "/nonexistent/jwks.json"], "--jwt-jwks-file"),
        (["--bogus"], "--bogus"),
    ])
    func badFlagStopsBeforeWritingAnything(_ arguments: [String], _ flag: String) async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (status, _, stderr) = try await run(["serve"] + arguments, in: directory)
        #expect(status != 0)
        #expect(stderr.contains(flag), "\(stderr)")
        #expect(stderr.split(separator: "\n").count == 1)
        #expect(!FileManager.default.fileExists(atPath: directory + "/registry-data"))
    }

    @Test func badEnvironmentValueNamesTheFlagAndAFlagBeatsIt() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (status, _, stderr) = try await run(["serve"], in: directory, environment: ["REGISTRY_DEVICE_TTL": "soon"])
        #expect(status == 2)
        #expect(stderr.contains("--device-ttl"))
        #expect(stderr.contains("REGISTRY_DEVICE_TTL"))
        let (minted, _, mintErr) = try await run(["mint-token", "--user", "u", "--device-ttl", "1d"], in: directory,
                                           environment: ["REGISTRY_DEVICE_TTL": "soon"])
        #expect(minted == 0, "\(mintErr)")
    }

    /// Runs a tool (openssl) and returns its stdout; the test fails on a non-zero exit.
    private func tool(_ path: String, _ arguments: [String], input: Data? = nil) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let out = Pipe(), inPipe = Pipe()
        process.standardOutput = out
        process.standardInput = inPipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        if let input { inPipe.fileHandleForWriting.write(input) }
        try inPipe.fileHandleForWriting.close()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(path) \(arguments)")
        return data
    }

    private func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    @Test func jwksFileConfiguresRS256AndNoSecretIsGenerated() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = directory + "/rsa.pem"
        _ = try tool("/usr/bin/openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key])
        let modulusLine = String(decoding: try tool("/usr/bin/openssl", ["rsa", "-in", key, "-noout", "-modulus"]), as: UTF8.self)
        let hex = Array(modulusLine.trimmingCharacters(in: .whitespacesAndNewlines).dropFirst("Modulus=".count))
        let modulus = Data(stride(from: 0, to: hex.count, by: 2).map { UInt8(String(hex[$0..<$0 + 2]), radix: 16)! })
        let jwks = #"{"keys":[{"kty":"RSA","kid":"k1","use":"sig","n":"\#(base64URL(modulus))","e":"AQAB"}]}"#
        try jwks.write(toFile: directory + "/jwks.json", atomically: true, encoding: .utf8)

        let header = base64URL(Data(#"{"alg":"RS256","kid":"k1","typ":"JWT"}"#.utf8))
        let exp = Int(Date().timeIntervalSince1970) + 600
        let payload = base64URL(Data(#"{"sub":"rsa-user","exp":\#(exp)}"#.utf8))
        let signature = try tool("/usr/bin/openssl", ["dgst", "-sha256", "-sign", key], input: Data("\(header).\(payload)".utf8))
        let token = "\(header).\(payload).\(base64URL(signature))"

        let server = try await Server(arguments: ["--jwt-jwks-file", directory + "/jwks.json"], directory: directory)
        #expect(server.port > 0, "log: \(server.log)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/registry-data/secrets/jwt-hs256.secret"))
        let created = try await request("POST", server.port, "/v1/devices", bearer: token, body: #"{"deviceId": "r1"}"#)
        #expect(created.0 == 201, "\(created.1)")
        let tampered = try await request("GET", server.port, "/v1/devices", bearer: String(token.dropLast(2)) + "AA")
        #expect(tampered.0 == 401)
        #expect(server.stop() == 0)
        let (minted, _, mintError) = try await run(["mint-token", "--user", "u", "--jwt-jwks-file", directory + "/jwks.json"], in: directory)
        #expect(minted == 2)
        #expect(mintError.contains("--jwt-hs256-secret-file"))
    }
}
