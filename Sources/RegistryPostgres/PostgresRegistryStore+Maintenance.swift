import RegistryCore
import Dispatch
import Postgres
import Synchronization
import TokenSealing

/// Operator work on PostgreSQL: export and import (the way between
/// backends), a check of what the schema's constraints do not already
/// guarantee, and token key rotation across nodes.
extension PostgresRegistryStore {
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

    /// Primary keys, the unique owner key and foreign keys already hold the
    /// indexes together; this checks the rest in one snapshot: every token
    /// opens with the token keys and its owner key is its own, and no user
    /// or device holds more than the caps allow.
    public func check(limit: Int = 100, progress: ((_ entriesDone: Int) -> Void)? = nil) async throws -> [String] {
        let keys = sealingKeys
        let limits = configuration.limits
        let caps = PostgresCheck.Caps(devices: limits.maxDevicesPerUser, activities: limits.maxActivitiesPerDevice,
                                      tombstones: limits.maxTombstonesPerUser)
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

    /// PostgreSQL keeps its indexes itself: there is nothing of ours to rebuild.
    public func repairIndexes(lineLimit: Int, progress: ((_ entriesDone: Int) -> Void)?) async throws -> IndexRepairSummary? { nil }

    /// A lost database is transient: the pool reconnects (a failover finds the new primary).
    public var hasFailedPermanently: Bool { false }

    // MARK: Token key rotation

    /// A session advisory lock on a connection of its own, held until
    /// `release()` (or the rotation's process ends: the database drops it
    /// with the session). The holder is named in `registry_meta`.
    public func lockKeyRotation() throws -> any KeyRotationLock {
        try PostgresRotationLock(configuration.connectionString, key: locks.rotation)
    }

    /// Checks `ring` against the registry (the same index key; every sealing
    /// key with a recorded check value opens it) and seals under its current
    /// key from now on.
    public func useSealingKeys(_ ring: TokenKeyRing) async throws {
        guard ring.indexKey == sealingKeys.current.ring.indexKey else {
            throw RegistryOpenError.wrongTokenKeys(detail: "another index key")
        }
        try await translatingErrors {
            try await pool.withConnection { try PostgresMeta.verifySealingKeys(ring, $0) }
        }
        sealingKeys.install(ring)
    }

    /// Records the current key's check value and announces it, holding the
    /// key barrier exclusive: the announcement commits only once every write
    /// that started before it has ended, and every write after it reads it
    /// (`writing`), so none seals under an older key once it is visible.
    public func announceSealingKey() async throws {
        let vault = sealingKeys.current, barrier = locks.keyBarrier
        try await translatingErrors {
            try await pool.withConnection { connection in
                try connection.retryingTransaction(isolation: .repeatableRead) { connection in
                    try connection.advisoryTransactionLock(barrier)
                    let check = PostgresSchema.Meta.sealingKeyCheck + String(vault.ring.currentKeyID)
                    if try PostgresMeta.value(check, connection) == nil { try PostgresMeta.insert(check, vault.keyCheck(), connection) }
                    try PostgresMeta.put(PostgresSchema.Meta.sealingKeyID, [vault.ring.currentKeyID], connection)
                }
            }
        }
    }

    public func sealingKeyUsage() async throws -> [UInt8: Int] {
        try await translatingErrors { try await pool.withConnection { try PostgresMeta.keysInUse($0) } }
    }

    /// Drops the check values of retired keys: the registry no longer uses
    /// them, so the open-time check no longer asks for them.
    public func forgetSealingKeys(_ ids: [UInt8]) async throws {
        try await translatingErrors { try await pool.withConnection { try PostgresMeta.forget(ids, $0) } }
    }

    /// Walks the tokens in key order, `batchSize` per transaction, sealing
    /// again under the current key what an older key sealed.
    public func resealTokens(batchSize: Int = 500, progress: ((_ visited: Int) -> Void)? = nil) async throws -> Int {
        var resealed = 0, visited = 0
        try await ResumableSteps.run { (from: [PostgresValue?]?) in
            let step = try await writing { writer in try PostgresKeyRotation.reseal(writer, after: from, batchSize: batchSize) }
            resealed += step.resealed
            visited += step.visited
            progress?(visited)
            return step.resume
        }
        return resealed
    }
}

/// `lockKeyRotation`'s lock: a session advisory lock on its own connection.
final class PostgresRotationLock: KeyRotationLock {
    /// The session holding the lock; nil once released.
    private let session: Mutex<PostgresConnection?>
    private let key: Int64

    init(_ connectionString: String, key: Int64) throws {
        let connection = try PostgresConnection(connectionString)
        guard try connection.tryAdvisoryLock(key) else {
            let holder = try? PostgresMeta.value(PostgresSchema.Meta.rotationHolder, connection)
            connection.close()
            throw KeyRotationError.inProgress(holder: holder.map { String(decoding: $0, as: UTF8.self) } ?? "another node")
        }
        try PostgresMeta.put(PostgresSchema.Meta.rotationHolder, Array(ProcessIdentity.current.description.utf8), connection)
        session = Mutex(connection)
        self.key = key
    }

    func release() {
        guard let connection = session.withLock({ session -> PostgresConnection? in
            defer { session = nil }
            return session
        }) else { return }
        _ = try? connection.advisoryUnlock(key)
        connection.close()
    }

    deinit { release() }
}
