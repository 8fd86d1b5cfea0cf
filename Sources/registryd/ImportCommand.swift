import Foundation
import Registry
import RegistryHTTP

/// `registryd import [--from FILE]`: reads `export`'s JSON lines (stdin by
/// default), all of them before writing, so a bad line (exit 2, naming it)
/// imports nothing.
enum ImportCommand: OperatorCommand {
    static func run(_ store: LMDBRegistryStore, _ arguments: Arguments) throws -> Int32 {
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
        return 0
    }
}
