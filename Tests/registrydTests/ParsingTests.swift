import Testing
@testable import registryd

/// The executable's own parsing, without running it: flags and their
/// environment variables, values, the limits they set, and connection
/// strings as logs show them.
@Suite struct ParsingTests {
    private func arguments(_ raw: [String], environment: [String: String] = [:]) throws -> Arguments {
        try Arguments(raw, valued: ["apps", "max-devices-per-user", "device-ttl", "postgres-url"], switches: ["json"],
                      environmentFlags: ["apps", "max-devices-per-user", "device-ttl", "postgres-url"], environment: environment)
    }

    @Test func aFlagBeatsItsVariableAndBothNameTheirSource() throws {
        let parsed = try arguments(["--max-devices-per-user=7"], environment: ["REGISTRY_MAX_DEVICES_PER_USER": "9",
                                                                               "REGISTRY_DEVICE_TTL": "2d"])
        #expect(parsed.value("max-devices-per-user")?.value == "7")
        #expect(parsed.value("device-ttl")?.source == "--device-ttl (from REGISTRY_DEVICE_TTL)")
        #expect(throws: Arguments.Failure.self) { try arguments(["--json=1"]) }
        #expect(throws: Arguments.Failure.self) { try arguments(["--nope", "1"]) }
    }

    @Test func theRemovedMaxAppsIsRefusedWithWhatReplacesIt() throws {
        #expect {
            try arguments(["--max-apps", "3"])
        } throws: { ($0 as? Arguments.Failure)?.description.hasPrefix("--max-apps was removed: apps are declared") == true }
        let stale = try arguments([], environment: ["REGISTRY_MAX_APPS": "3"])
        #expect(stale.removedVariable("max-apps")?.description.hasPrefix("REGISTRY_MAX_APPS is no longer read") == true)
    }

    @Test func limitsComeFromTheirFlagsAndKeepTheirDefaultsOtherwise() throws {
        let limits = try StoreRules.limits(try arguments(["--apps", "com.a, com.b", "--device-ttl", "2d"]))
        #expect(limits.apps.ids == ["com.a", "com.b", "default"])
        #expect(limits.deviceTTL == .seconds(2 * 86_400))
        #expect(limits.maxDevicesPerUser == 20 && limits.activityTTL == .seconds(90 * 86_400))
        #expect(throws: Arguments.Failure.self) { try StoreRules.limits(try arguments(["--apps", "bad id"])) }
        #expect(throws: Arguments.Failure.self) { try StoreRules.limits(try arguments(["--max-devices-per-user", "0"])) }
    }

    @Test(arguments: [
        ("postgresql://u:secret@db/registry?sslpassword=secret&sslmode=require", "postgresql://u:***@db/registry?sslpassword=***&sslmode=require"),
        ("host=db password=secret SSLPassword='sec ret' dbname=r", "host=db password=*** SSLPassword='***' dbname=r"),
    ])
    func everyPasswordParameterIsRedacted(_ url: String, _ shown: String) {
        #expect(ConnectionString(url).redacted == shown)
        #expect(!ConnectionString(url).redacted.contains("secret"))
    }

    @Test func aStringInNeitherFormIsMalformed() {
        #expect(ConnectionString("localhost").malformation != nil)
        #expect(ConnectionString("postgresql://db/r?x=%zz").malformation != nil)
        #expect(ConnectionString("host=db dbname=r").malformation == nil)
    }
}
