import Foundation
import Registry
import RegistryHTTP

/// `registryd export > records.jsonl`: every record as one JSON line on
/// stdout (tokens included: it is an operator tool), the count on stderr so
/// it stays out of the file.
enum ExportCommand: OperatorCommand {
    static func run(_ store: LMDBRegistryStore, _ arguments: Arguments) throws -> Int32 {
        var count = 0
        try store.export { record in
            var line = ExportFormat.encode(record)
            line.append(0x0A)
            FileHandle.standardOutput.write(Data(line))
            count += 1
        }
        FileHandle.standardError.write(Data("exported \(count) records\n".utf8))
        return 0
    }
}
