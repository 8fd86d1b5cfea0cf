import Foundation
import Registry
import RegistryHTTP

/// `stats`, `sweep` and `backup`: operator work on a data directory, also
/// while a server runs on it (LMDB serialises writers across processes, and
/// readers never block).
enum OperatorCommand {
    static func run(_ name: String, _ rawArguments: [String]) throws -> Int32 {
        let arguments = try Arguments(rawArguments, valued: Settings.storeFlags.union(["to"]),
                                      switches: ["json", "dry-run"])
        let settings = try Settings(arguments)
        guard FileManager.default.fileExists(atPath: settings.storeDirectory) else {
            throw Arguments.Failure(description: "--data-dir: no registry at '\(settings.dataDirectory)'")
        }
        var configuration = LMDBRegistryStore.Configuration(directory: settings.storeDirectory)
        configuration.deviceTTLSeconds = settings.deviceTTLSeconds
        configuration.activityTTLSeconds = settings.activityTTLSeconds
        configuration.maxDevicesPerUser = settings.maxDevicesPerUser
        let store = try LMDBRegistryStore(configuration: configuration)
        defer { store.shutdown() }
        switch name {
        case "stats":
            let stats = try store.stats()
            if arguments.isSet("json") {
                print(String(decoding: JSONWriter.encode(StatsDocument.stats(stats)), as: UTF8.self))
            } else {
                print("""
                    devices            \(stats.devices)
                    pushTokens         \(stats.pushTokens)
                    pushToStartTokens  \(stats.pushToStartTokens)
                    activityTokens     \(stats.activityTokens)
                    tombstones         \(stats.tombstones)
                    mapSizeBytes       \(stats.mapSizeBytes)
                    usedBytes          \(stats.usedBytes)
                    lastSweepAt        \(stats.lastSweepAt.map(RFC3339.format) ?? "never")
                    """)
            }
        case "sweep":
            let counts = try blocking { try await store.sweep(dryRun: arguments.isSet("dry-run")) }
            print(String(decoding: JSONWriter.encode(StatsDocument.sweep(counts)), as: UTF8.self))
        default:
            guard let (target, _) = arguments.value("to") else {
                throw Arguments.Failure(description: "--to is required")
            }
            try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
            try store.backup(toDirectory: target)
            print("backup written to \(target)")
        }
        return 0
    }

    /// Runs an async store call from synchronous main-thread code.
    private static func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox<T>()
        Task {
            do { box.result = .success(try await body()) } catch { box.result = .failure(error) }
            done.signal()
        }
        done.wait()
        return try box.result!.get()
    }
}

/// Hands one result from a task to the thread waiting on a semaphore.
private final class ResultBox<T: Sendable>: @unchecked Sendable {
    var result: Result<T, any Error>?
}
