import Foundation
import LMDB
@testable import Registry
import Testing

/// An environment written by schema 1 (device values without
/// `activityCount`) is brought up to schema 2 at open.
struct MigrationTests {
    /// Rewrites every device value in the version 1 layout and marks the
    /// environment as schema 1, as the previous release left it.
    private func downgradeToSchemaOne(_ directory: String) throws {
        let environment = try Environment(Environment.Configuration(path: directory))
        defer { environment.close() }
        let devices = try environment.openDatabase("devices")
        let meta = try environment.openDatabase("meta")
        try environment.write { txn in
            var rewritten: [([UInt8], [UInt8])] = []
            try txn.scan(devices) { key, value in
                let count = try DeviceValue(decoding: value).activityCount
                #expect(count < 128, "one varint byte")
                rewritten.append((key, [1] + value.dropFirst().dropLast()))
                return true
            }
            for (key, value) in rewritten { try txn.put(value, for: key, in: devices) }
            try txn.put([1, 1], for: Array("schemaVersion".utf8), in: meta)
        }
    }

    @Test func aSchemaOneEnvironmentGainsActivityCountsAtOpen() async throws {
        let f = try makeStore(); defer { f.close() }
        for i in 0..<5 {
            _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
                activityId: "m\(i)", userId: "alice", deviceId: "d1", token: apnsToken(i)))
        }
        for user in 0..<30 { try await f.store.register("u\(user)", "d", token: 100 + user) }
        f.lmdb.shutdown()
        try downgradeToSchemaOne(f.configuration.directory)
        try f.reopen()
        #expect(try f.store.device(userId: "alice", deviceId: "d1")?.activityCount == 5)
        #expect(try f.store.device(userId: "u3", deviceId: "d")?.activityCount == 0)
        #expect(try f.lmdb.check().isEmpty)
        let version = try f.lmdb.environment.read { txn in try txn.get(Array("schemaVersion".utf8), in: f.lmdb.schema.meta) }
        #expect(version == [1, 2])
    }

    @Test func aMigrationInSmallBatchesCountsEveryDevice() async throws {
        let f = try makeStore(); defer { f.close() }
        for user in 0..<10 {
            _ = try await f.store.registerActivityToken(ActivityTokenRegistration(
                activityId: "m", userId: "u\(user)", deviceId: "d", token: apnsToken(user)))
        }
        f.lmdb.shutdown()
        try downgradeToSchemaOne(f.configuration.directory)
        let environment = try Environment(Environment.Configuration(path: f.configuration.directory))
        let schema = try Schema(environment)
        var partial = SchemaMigration(environment: environment, schema: schema)
        partial.batchSize = 3
        try partial.run()
        environment.close()
        try f.reopen()
        for user in 0..<10 {
            #expect(try f.store.device(userId: "u\(user)", deviceId: "d")?.activityCount == 1)
        }
    }
}
