import Foundation
import JSON
import Registry
import RegistryHTTP

/// `stats`, `sweep`, `backup`, `check`, `export` and `import`: operator work
/// on a data directory, also while a server runs on it (LMDB serialises
/// writers across processes, and readers never block).
enum OperatorCommand {
    static func run(_ name: String, _ rawArguments: [String]) throws -> Int32 {
        let arguments = try Arguments(rawArguments, valued: Settings.storeFlags.union(["to", "from"]),
                                      switches: ["json", "dry-run"])
        let settings = try Settings(arguments)
        guard FileManager.default.fileExists(atPath: settings.storeDirectory) else {
            throw Arguments.Failure(description: "--data-dir: no registry at '\(settings.dataDirectory)'")
        }
        var configuration = LMDBRegistryStore.Configuration(directory: settings.storeDirectory)
        configuration.deviceTTLSeconds = settings.deviceTTLSeconds
        configuration.activityTTLSeconds = settings.activityTTLSeconds
        configuration.maxDevicesPerUser = settings.maxDevicesPerUser
        configuration.maxActivitiesPerDevice = settings.maxActivitiesPerDevice
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
            let counts = try Blocking.result { try await store.sweep(dryRun: arguments.isSet("dry-run")) }.get()
            print(String(decoding: JSONWriter.encode(StatsDocument.sweep(counts)), as: UTF8.self))
        case "check":
            let problems = try store.check()
            for problem in problems { print(problem) }
            print(problems.isEmpty ? "ok: every index agrees with its records" : "\(problems.count) problem(s) found")
            return problems.isEmpty ? 0 : 1
        case "export":
            var count = 0
            try store.export { record in
                var line = ExportFormat.encode(record)
                line.append(0x0A)
                FileHandle.standardOutput.write(Data(line))
                count += 1
            }
            FileHandle.standardError.write(Data("exported \(count) records\n".utf8))
        case "import":
            let data: Data
            if let (path, source) = arguments.value("from") {
                guard let contents = FileManager.default.contents(atPath: path) else {
                    throw Arguments.Failure(description: "\(source): cannot read '\(path)'")
                }
                data = contents
            } else {
                data = FileHandle.standardInput.readDataToEndOfFile()
            }
            var records: [ExportedRecord] = []
            for (index, line) in data.split(separator: 0x0A).enumerated() where !line.isEmpty {
                do {
                    records.append(try ExportFormat.decode(Array(line), line: index + 1))
                } catch let error as ExportFormat.LineError {
                    throw Arguments.Failure(description: "--from: \(error)")
                } catch {
                    throw Arguments.Failure(description: "--from: line \(index + 1): \(error)")
                }
            }
            let written = try Blocking.result { [records] in try await store.importRecords(records) }.get()
            print("imported \(written) records")
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
}
