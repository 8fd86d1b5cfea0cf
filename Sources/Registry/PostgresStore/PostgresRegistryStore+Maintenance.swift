import Dispatch
import Postgres

/// Operator work on PostgreSQL: export and import (the way between
/// backends), a check of what the schema's constraints do not already
/// guarantee, and token key rotation across nodes.
extension PostgresRegistryStore: RegistryMaintenance {
    /// One REPEATABLE READ, READ ONLY transaction (one snapshot) on a pooled
    /// connection's thread produces pages of records; the caller's task
    /// visits them as they come. At most four pages wait between the two,
    /// so an export larger than memory streams. A `visit` that throws ends
    /// the transaction.
    public func export(_ visit: (ExportedRecord) throws -> Void) async throws {
        let (pages, sink) = AsyncThrowingStream<[ExportedRecord], any Error>.makeStream()
        let room = DispatchSemaphore(value: 4)
        let stopped = CancelFlag()
        let keys = sealingKeys, pool = self.pool
        let producer = Task {
            do {
                try await translatingErrors {
                    try await pool.withConnection { connection in
                        try connection.transaction(isolation: .repeatableRead) { connection in
                            try connection.query("SET TRANSACTION READ ONLY")
                            try PostgresExport(connection: connection, vault: keys.current).run { page in
                                room.wait()
                                if stopped.isSet { throw CancellationError() }
                                sink.yield(page)
                            }
                        }
                    }
                }
                sink.finish()
            } catch {
                sink.finish(throwing: error)
            }
        }
        defer {
            stopped.set()
            room.signal()
        }
        do {
            for try await page in pages {
                room.signal()
                for record in page { try visit(record) }
            }
        } catch {
            stopped.set()
            room.signal()
            await producer.value
            throw error
        }
    }

    public func importRecords(_ records: [ExportedRecord]) async throws -> Int {
        try await ImportBatches.write(records) { chunk in
            try await writing { try $0.restoreQuietly(chunk) }
        }
    }

    /// Primary keys, the unique owner key and foreign keys already hold the
    /// indexes together; this checks the rest in one snapshot: every token
    /// opens with the token keys and its owner key is its own, and no user
    /// or device holds more than the caps allow.
    public func check(limit: Int = 100, progress: ((_ entriesDone: Int) -> Void)? = nil) async throws -> [String] {
        let keys = sealingKeys
        let caps = PostgresCheck.Caps(devices: configuration.maxDevicesPerUser,
                                      activities: configuration.maxActivitiesPerDevice,
                                      tombstones: configuration.maxTombstonesPerUser)
        let (problems, visited) = try await translatingErrors {
            try await pool.withConnection { connection in
                try connection.transaction(isolation: .repeatableRead) { connection in
                    try PostgresCheck(connection: connection, vault: keys.current, caps: caps, limit: limit).run()
                }
            }
        }
        progress?(visited)
        return problems
    }

    // MARK: Token key rotation

    public func announceSealingKey() async throws {
        let current = sealingKeys.current.ring.currentKeyID
        try await writing { writer in
            try PostgresMeta.put(PostgresSchema.Meta.sealingKeyID, [current], writer.connection)
        }
    }

    /// Byte 1 of a sealed value is its key id (`TokenSealer`'s format).
    public func sealingKeyUsage() async throws -> [UInt8: Int] {
        try await translatingErrors {
            try await pool.withConnection { connection in
                let r = try connection.query("SELECT get_byte(sealed, 1), count(*) FROM registry_tokens GROUP BY 1")
                var usage: [UInt8: Int] = [:]
                for row in 0..<r.rowCount {
                    usage[UInt8(clamping: try r.int64(row, 0) ?? 0)] = Int(try r.int64(row, 1) ?? 0)
                }
                return usage
            }
        }
    }

    /// Walks the tokens in key order, `batchSize` per transaction, sealing
    /// again under the current key what an older key sealed.
    public func resealTokens(batchSize: Int = 500, progress: ((_ visited: Int) -> Void)? = nil) async throws -> Int {
        var resealed = 0, visited = 0
        var after: [PostgresValue?]?
        repeat {
            try Task.checkCancellation()
            let from = after
            let step = try await writing { writer in try PostgresKeyRotation.reseal(writer, after: from, batchSize: batchSize) }
            resealed += step.resealed
            visited += step.visited
            progress?(visited)
            after = step.resume
        } while after != nil
        return resealed
    }
}

/// Batches of an import, shared by the backends: 500 records per
/// transaction, each history event paired with how many identical events
/// precede it in the import (so two identical events both come back, and
/// importing twice adds nothing).
enum ImportBatches {
    static func write(_ records: [ExportedRecord], batchSize: Int = 500,
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
