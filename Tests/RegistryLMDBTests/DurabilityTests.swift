import Foundation
import LMDB
@testable import RegistryCore
@testable import RegistryLMDB
import RegistryTestSupport
import Testing
import TokenSealing

/// The LMDB environment through what happens to files: killed processes, a
/// map that cannot grow, corrupt values, newer schemas, shutdown, backups.
struct DurabilityTests {
    @Test func everyAcknowledgedWriteSurvivesAKilledProcess() async throws {
        let directory = NSTemporaryDirectory() + "registry-crash-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (process, printed) = try Self.runBench(["crash-writer", directory, "300"])
        #expect(printed == "committed 300\n")
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL)

        defer { try? FileManager.default.removeItem(atPath: directory + ".token-keys") }
        let keys = try TokenKeyFile.load(path: directory + ".token-keys")
        let store = try LMDBRegistryStore(configuration: LMDBRegistryStore.Configuration(directory: directory, tokenKeys: keys))
        defer { store.shutdown() }
        for i in 0..<300 {
            let d = try await store.device(userId: "crash-user-\(i)", deviceId: "device")
            #expect(d?.pushToken?.token == Self.crashToken(i) && d?.sequence == 1)
        }
        #expect(try await store.stats().devices == 300)
    }

    /// A map that cannot grow (mmap ENOMEM under RLIMIT_AS) leaves LMDB's
    /// meta pointers dangling: the process must refuse the write and every
    /// later read, not crash on them, and the data directory stays sound.
    @Test func aMapThatCannotGrowMakesTheStoreUnusableWithoutACrash() async throws {
        let directory = NSTemporaryDirectory() + "registry-grow-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (process, printed) = try Self.runBench(["grow-under-limit", directory, "12"])
        if process.terminationStatus == 5 && process.terminationReason == .exit { return }  // a sanitizer build
        #expect(process.terminationReason == .exit, "died by signal \(process.terminationStatus); printed: \(printed)")
        #expect(process.terminationStatus == 3, "\(printed)")
        #expect(printed.contains("write refused: unavailable"))
        #expect(printed.contains("read refused: unavailable"))
        #expect(printed.contains("healthy: false"))

        defer { try? FileManager.default.removeItem(atPath: directory + ".token-keys") }
        let keys = try TokenKeyFile.load(path: directory + ".token-keys")
        let store = try LMDBRegistryStore(configuration: LMDBRegistryStore.Configuration(directory: directory, tokenKeys: keys))
        defer { store.shutdown() }
        #expect(try store.check().isEmpty)
        #expect(try await store.stats().devices > 64)
    }

    @Test func aOneMegabyteMapGrowsToHoldAHundredThousandDevices() async throws {
        let f = try makeStore { $0.initialMapSize = 1 << 20 }
        defer { f.close() }
        let store = f.store
        for batch in 0..<100 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<1_000 {
                    group.addTask { try await store.register("user-\(batch)-\(i)", "device", token: batch * 1_000 + i) }
                }
                try await group.waitForAll()
            }
        }
        let stats = try await store.stats()
        #expect(stats.devices == 100_000 && stats.pushTokens == 100_000)
        #expect(stats.reservedBytes > 1 << 20 && stats.usedBytes <= stats.reservedBytes)
        #expect(try await store.device(userId: "user-99-999", deviceId: "device")?.pushToken?.token == apnsToken(99_999))
    }

    @Test func aMapThatCannotGrowFailsWritesWithStorageFullAndStaysHealthy() async throws {
        let f = try makeStore { c in
            c.initialMapSize = 256 << 10
            c.maxMapSize = 256 << 10
        }
        defer { f.close() }
        var failure: RegistryError?
        var written = 0
        while failure == nil && written < 100_000 {
            let store = f.store
            let base = written
            failure = await registryError {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for i in 0..<100 { group.addTask { try await store.register("u\(base + i)", "d", token: base + i) } }
                    try await group.waitForAll()
                }
            }
            written += 100
        }
        #expect(failure == .storageFull)
        #expect(f.lmdb.isHealthy)
        #expect(try await f.store.device(userId: "u0", deviceId: "d") != nil, "reads keep working")
    }

    @Test func aCorruptStoredValueIsAnErrorNotACrash() async throws {
        let f = try makeStore(); defer { f.close() }
        try await f.store.register("alice", "d1", token: 1)
        try await f.store.register("bob", "d1", token: 2)
        f.lmdb.shutdown()
        let environment = try Environment(Environment.Configuration(path: f.configuration.directory))
        let devices = try environment.openDatabase("v3.devices")
        try environment.write { txn in try txn.put([1, 0, 7], for: StoreKey.device("alice", "d1"), in: devices) }
        environment.close()
        try f.reopen()
        await #expect(throws: StoredValueError.self) { _ = try await f.store.device(userId: "alice", deviceId: "d1") }
        await #expect(throws: StoredValueError.self) { _ = try await f.store.devices(userId: "alice") }
        await #expect(throws: StoredValueError.self) { try await f.store.register("alice", "d1") }
        #expect(f.lmdb.isHealthy)
        #expect(try await f.store.register("bob", "d1").created == false)
    }

    @Test func aNewerSchemaVersionRefusesToOpen() throws {
        let f = try makeStore(); defer { f.close() }
        f.lmdb.shutdown()
        let environment = try Environment(Environment.Configuration(path: f.configuration.directory))
        let meta = try environment.openDatabase("meta")
        try environment.write { txn in try txn.put([1, UInt8(Schema.version + 1)], for: Array("schemaVersion".utf8), in: meta) }
        environment.close()
        #expect(throws: RegistryOpenError.schemaMismatch(found: Schema.version + 1, expected: Schema.version)) { try f.reopen() }
    }

    @Test func shutdownCommitsQueuedWritesThenRefusesNewOnes() async throws {
        let f = try makeStore(); defer { f.close() }
        let store = f.store
        let writes = Task {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for i in 0..<200 {
                    group.addTask { (try? await store.register("u\(i)", "d", token: i)) != nil }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
        }
        try await Task.sleep(for: .milliseconds(20))
        f.lmdb.shutdown()
        f.lmdb.shutdown()
        let acknowledged = try await writes.value.filter { $0 }.count
        let error = await registryError { try await store.register("late", "d") }
        #expect(error == .unavailable(reason: "shutting down"))
        try f.reopen()
        #expect(try await f.store.stats().devices == acknowledged)
    }

    @Test func backupIsAConsistentCopyThatOpensAsAStore() async throws {
        let f = try makeStore(); defer { f.close() }
        for i in 0..<20 { try await f.store.register("u\(i)", "d", token: i) }
        let copy = f.directory + "/backup"
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        try f.lmdb.backup(toDirectory: copy)
        let restored = try LMDBRegistryStore(configuration: LMDBRegistryStore.Configuration(directory: copy, tokenKeys: TestKeys.ring))
        defer { restored.shutdown() }
        #expect(try await restored.stats().devices == 20)
        #expect(try await restored.device(userId: "u7", deviceId: "d")?.pushToken?.token == apnsToken(7))
    }

    /// Runs `registry-bench` with `arguments` to its end; returns it and what it printed.
    static func runBench(_ arguments: [String]) throws -> (Process, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(benchBinary, "registry-bench is built next to the tests"))
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process, printed)
    }

    /// The token `registry-bench crash-writer` gives record `i`.
    static func crashToken(_ i: Int) -> String {
        let hex = String(i, radix: 16)
        return String(repeating: "0", count: 64 - hex.count) + hex
    }

    /// `registry-bench` sits next to the test bundle in the build directory.
    static let benchBinary: String? = {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while url.path != "/" {
            let candidate = url.appendingPathComponent("registry-bench").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            url.deleteLastPathComponent()
        }
        return nil
    }()
}
