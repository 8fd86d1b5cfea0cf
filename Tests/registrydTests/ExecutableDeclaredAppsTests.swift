import Foundation
import RegistrydTestSupport
import Testing

/// `--apps` (API v1.2, docs/api.md): the flag, the removed `--max-apps`, and the
/// start-up line naming stored apps that are no longer declared.
extension ExecutableTests {
    @Test func aBadAppsListOrTheRemovedMaxAppsStopsServeNamingTheFlag() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (bad, _, badError) = try await run(["serve", "--listen", "127.0.0.1:0", "--apps", "com.example.a,bad id"], in: directory)
        #expect(bad == 2 && badError.contains("--apps: 'bad id' contains a character that is not allowed"), "\(badError)")
        let (removed, _, removedError) = try await run(["serve", "--listen", "127.0.0.1:0", "--max-apps", "3"], in: directory)
        #expect(removed == 2 && removedError.contains("--max-apps was removed: apps are declared by the operator with --apps"),
                "\(removedError)")
        let (variable, _, variableError) = try await run(["stats"], in: directory, environment: ["REGISTRY_MAX_APPS": "3"])
        #expect(variable == 2 && variableError.contains("REGISTRY_MAX_APPS is no longer read"), "\(variableError)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/registry-data/lmdb"), "nothing was written")
    }

    @Test func serveTakesDeclaredAppsAndLogsStoredAppsNoLongerDeclared() async throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (minted, jwt, mintError) = try await run(["mint-token", "--user", "alice"], in: directory)
        try #require(minted == 0, "\(mintError)")
        let bearer = jwt.trimmingCharacters(in: .newlines)
        let body = #"{"deviceId":"d1","appId":"com.example.watch"}"#

        let declaring = try await Server(arguments: ["--apps", "com.example.watch, com.example.scores"], directory: directory)
        #expect(try await request("POST", declaring.port, "/v1/devices", bearer: bearer, body: body).0 == 201)
        #expect(!declaring.log.contains("undeclared_apps"), "\(declaring.log)")
        #expect(declaring.stop() == 0)

        let narrower = try await Server(arguments: [], directory: directory)
        let refused = try await request("POST", narrower.port, "/v1/devices", bearer: bearer, body: body)
        #expect(refused.0 == 400 && refused.1.contains("appId is not a declared app"), "\(refused.1)")
        #expect(narrower.stop() == 0)
        let line = narrower.log.split(separator: "\n").first { $0.contains(#""event":"undeclared_apps""#) }
        #expect(line?.contains(#""count":1,"apps":["com.example.watch"],"declared":["default"]"#) == true, "\(narrower.log)")
    }
}
