import JSON
import Registry
@testable import RegistryHTTP

/// Fuzz target `export-line`: one line of `registryd import` input.
///
/// Properties: nothing traps (a bad line throws `ExportFormat.LineError` or
/// a `JSONParseError`); a decoded record, encoded again, decodes to the
/// same record.
enum ExportLineFuzz {
    static func run(_ bytes: [UInt8]) -> [String] {
        var check = FuzzCheck()
        let record: ExportedRecord
        do {
            record = try ExportFormat.decode(bytes, line: 1)
        } catch {
            check.expect(error is ExportFormat.LineError || error is JSONParseError,
                         "an unexpected error type \(type(of: error)): \(error)")
            return check.violations
        }
        let encoded = ExportFormat.encode(record)
        check.expect((try? ExportFormat.decode(encoded, line: 1)) == record,
                     "encode → decode changed the record: \(String(decoding: encoded, as: UTF8.self))")
        return check.violations
    }
}
