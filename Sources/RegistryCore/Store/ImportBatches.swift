/// Batches of an import, shared by the backends: 500 records per
/// transaction, each history event paired with how many identical events
/// precede it in the import (so two identical events both come back, and
/// importing twice adds nothing).
package enum ImportBatches {
    package static func write(_ records: [ExportedRecord], batchSize: Int = 500,
                      _ commit: @Sendable ([(ExportedRecord, Int)]) async throws -> Int) async throws -> Int {
        var seen: [HistoryEvent: Int] = [:]
        let occurrences = records.map { record -> Int in
            guard case .history(let event) = record else { return 1 }
            seen[event, default: 0] += 1
            return seen[event]!
        }
        var written = 0
        for start in stride(from: 0, to: records.count, by: batchSize) {
            let range = start..<min(start + batchSize, records.count)
            written += try await commit(Array(zip(records[range], occurrences[range])))
        }
        return written
    }
}
