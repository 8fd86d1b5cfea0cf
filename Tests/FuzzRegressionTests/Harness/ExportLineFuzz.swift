import JSON
import RegistryCore
@testable import RegistryHTTP

/// Fuzz target `export-line`: one line of `registryd import` input.
///
/// Properties: nothing traps (a bad line throws `ExportFormat.LineError` or
/// a `JSONParseError`); an imported record's times can be shown (formatted
/// as the views do); a decoded record, encoded again, decodes to the same
/// record.
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
        for time in timestamps(of: record) { _ = RFC3339.format(time) }
        let encoded = ExportFormat.encode(record)
        check.expect((try? ExportFormat.decode(encoded, line: 1)) == record,
                     "encode → decode changed the record: \(String(decoding: encoded, as: UTF8.self))")
        return check.violations
    }

    /// Every time a response could show for this record.
    static func timestamps(of record: ExportedRecord) -> [Timestamp] {
        switch record {
        case .device(let device, let activityTokens):
            [device.createdAt, device.lastSeenAt] + [device.pushToken, device.pushToStartToken].compactMap { $0?.updatedAt }
                + activityTokens.map(\.lastSeenAt)
        case .tombstone(let tombstone):
            [tombstone.deletedAt]
        case .history(let event):
            [event.at]
        }
    }
}
