import CLibPQ
import Foundation

/// One libpq connection. Its calls block until the server answers, so use it
/// only on a thread that may block: a `PostgresPool` connection thread (the
/// body of `withConnection`), a test, a command-line tool. Not thread-safe
/// and deliberately not `Sendable`: one thread owns it.
public final class PostgresConnection {
    private var handle: OpaquePointer?
    /// Set by an error after which this connection should not be reused even
    /// though libpq still calls it healthy (a read-only standby after a
    /// failover, an operator shutdown); the pool then replaces it.
    private(set) var discardRequested = false
    /// Statements prepared on this session, by their SQL text (see `query`).
    private var prepared: [String: String] = [:]
    /// At most this many statements are prepared per session: SQL built
    /// with varying text (a `LIMIT n`) beyond it runs unprepared.
    static let maxPreparedStatements = 256

    /// The session state libpq reports (`PQtransactionStatus`).
    public enum TransactionStatus: Sendable, Equatable {
        case idle, active, inTransaction, inFailedTransaction, unknown
    }

    /// Connects (blocking) with a libpq connection string, `key=value …` or
    /// a `postgresql://` URI; multi-host lists and `target_session_attrs`
    /// are libpq's and pass through. Defaults the string may override:
    /// `connect_timeout=5`, keepalives 10 s idle / 5 s interval / 3 probes.
    /// Always UTF-8; `bytea_output` is set to `hex`.
    public init(_ connectionString: String) throws {
        // With expand_dbname, values given before "dbname" are overridden by
        // the string's own; values after it override the string.
        let pairs: [(String, String)] = [
            ("connect_timeout", "5"),
            ("keepalives_idle", "10"),
            ("keepalives_interval", "5"),
            ("keepalives_count", "3"),
            ("dbname", connectionString),
            ("client_encoding", "UTF8"),
        ]
        let keywords = pairs.map { strdup($0.0) }
        let values = pairs.map { strdup($0.1) }
        defer {
            keywords.forEach { free($0) }
            values.forEach { free($0) }
        }
        let keywordPointers = keywords.map { UnsafePointer($0) } + [nil]
        let valuePointers = values.map { UnsafePointer($0) } + [nil]
        guard let connection = PQconnectdbParams(keywordPointers, valuePointers, 1) else {
            throw PostgresError(kind: .connectFailed, message: "out of memory allocating a connection",
                                connectionBroken: true)
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.trimmed(PQerrorMessage(connection))
            PQfinish(connection)
            throw PostgresError(kind: .connectFailed, message: message, connectionBroken: true)
        }
        // Notices (e.g. "relation … already exists, skipping") are not errors; keep them off stderr.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        handle = connection
        do {
            _ = try query("SET bytea_output = 'hex'")
        } catch let error as PostgresError {
            close()
            throw PostgresError(kind: .connectFailed, sqlState: error.sqlState,
                                message: "setting up the session: \(error.message)", connectionBroken: true)
        }
    }

    deinit {
        if let handle { PQfinish(handle) }
    }

    /// Closes the connection (`PQfinish`); later calls throw `.connectionLost`.
    public func close() {
        if let handle { PQfinish(handle) }
        handle = nil
    }

    /// Closed, or libpq reports `CONNECTION_BAD`.
    public var isBroken: Bool {
        guard let handle else { return true }
        return PQstatus(handle) == CONNECTION_BAD
    }

    public var transactionStatus: TransactionStatus {
        guard let handle else { return .unknown }
        switch PQtransactionStatus(handle) {
        case PQTRANS_IDLE: return .idle
        case PQTRANS_ACTIVE: return .active
        case PQTRANS_INTRANS: return .inTransaction
        case PQTRANS_INERROR: return .inFailedTransaction
        default: return .unknown
        }
    }

    /// The server process serving this connection (`pg_backend_pid()`); 0 when closed.
    public var backendPID: Int32 { handle.map { PQbackendPID($0) } ?? 0 }

    /// e.g. 150018 for 15.18; 0 when closed.
    public var serverVersion: Int { handle.map { Int(PQserverVersion($0)) } ?? 0 }

    /// The host and port actually connected to (of a multi-host list, the one chosen).
    public var host: String { handle.flatMap { PQhost($0) }.map { String(cString: $0) } ?? "" }
    public var port: String { handle.flatMap { PQport($0) }.map { String(cString: $0) } ?? "" }

    /// Runs one statement with out-of-band parameters (`$1`, `$2`, …; `nil`
    /// is NULL). Text, integers and booleans travel in text format, `bytea`
    /// in binary format. Throws `PostgresError` (`.server` with its
    /// SQLSTATE, `.connectionLost`, `.invalidParameter`).
    @discardableResult
    public func query(_ sql: String, _ parameters: [PostgresValue?] = [],
                      resultFormat: PostgresFormat = .text) throws -> PostgresResult {
        let handle = try openHandle()
        guard parameters.count <= Int(UInt16.max) else {
            throw PostgresError(kind: .invalidParameter, message: "\(parameters.count) parameters (at most 65535)")
        }
        var types = [Oid](), lengths = [Int32](), formats = [Int32]()
        var buffers = [UnsafeMutablePointer<CChar>?]()
        types.reserveCapacity(parameters.count)
        lengths.reserveCapacity(parameters.count)
        formats.reserveCapacity(parameters.count)
        buffers.reserveCapacity(parameters.count)
        defer { buffers.forEach { $0?.deallocate() } }

        func append(_ bytes: some Collection<UInt8>, type: Oid, format: Int32, terminate: Bool) {
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            var index = 0
            for byte in bytes {
                buffer[index] = CChar(bitPattern: byte)
                index += 1
            }
            buffer[index] = 0
            buffers.append(buffer)
            types.append(type)
            lengths.append(Int32(terminate ? 0 : bytes.count))
            formats.append(format)
        }

        for (index, parameter) in parameters.enumerated() {
            switch parameter {
            case nil:
                buffers.append(nil)
                types.append(0)
                lengths.append(0)
                formats.append(0)
            case .text(let text)?:
                guard !text.utf8.contains(0) else {
                    throw PostgresError(kind: .invalidParameter,
                                        message: "parameter $\(index + 1) contains a NUL character, which text cannot hold")
                }
                append(text.utf8, type: 0, format: 0, terminate: true)
            case .int64(let value)?:
                append(String(value).utf8, type: 20, format: 0, terminate: true)
            case .bool(let value)?:
                append((value ? "t" : "f").utf8, type: 16, format: 0, terminate: true)
            case .bytea(let bytes)?:
                guard bytes.count <= Int(Int32.max) else {
                    throw PostgresError(kind: .invalidParameter, message: "parameter $\(index + 1) is over 2 GiB")
                }
                append(bytes, type: 17, format: 1, terminate: false)
            }
        }
        let values = buffers.map { $0.map { UnsafePointer($0) } }
        if let name = try preparedName(sql, types, handle) {
            return try finish(PQexecPrepared(handle, name, Int32(parameters.count), values, lengths, formats,
                                             resultFormat.rawValue))
        }
        let result = PQexecParams(handle, sql, Int32(parameters.count), types, values, lengths, formats,
                                  resultFormat.rawValue)
        return try finish(result)
    }

    /// The name `sql` is prepared under on this session, preparing it the
    /// first time (with the parameter types of that call; a later call's
    /// values are read as those types). A statement with parameters runs
    /// prepared: the server parses and plans it once per session instead of
    /// on every call, which was most of its CPU per registry write (about
    /// ten short statements each). `nil` (run it unprepared) for a statement
    /// without parameters, or once the session holds `maxPreparedStatements`.
    /// A prepared statement outlives a rolled-back transaction and goes with
    /// its session; the server re-plans it after a schema change.
    private func preparedName(_ sql: String, _ types: [Oid], _ handle: OpaquePointer) throws -> String? {
        guard !types.isEmpty else { return nil }
        if let name = prepared[sql] { return name }
        guard prepared.count < Self.maxPreparedStatements else { return nil }
        let name = "registryd_\(prepared.count)"
        _ = try finish(PQprepare(handle, name, sql, Int32(types.count), types))
        prepared[sql] = name
        return name
    }

    /// Runs a script of one or more statements separated by semicolons (the
    /// simple query protocol; no parameters). Inside an open transaction
    /// they run in it; otherwise the script is one implicit transaction.
    /// Returns the last statement's result.
    @discardableResult
    public func executeScript(_ sql: String) throws -> PostgresResult {
        let handle = try openHandle()
        return try finish(PQexec(handle, sql))
    }

    // MARK: - Transactions

    /// `BEGIN ISOLATION LEVEL …`, `body`, `COMMIT`, on this connection, once.
    /// The body throwing rolls back and rethrows. A COMMIT the server
    /// answers with an error rolled back (rethrown; 40001 may come here);
    /// a COMMIT answered with ROLLBACK (the body swallowed an error) throws
    /// `.transactionAborted`; a connection lost while COMMIT was in flight
    /// throws `.commitOutcomeUnknown`. No retries here: see
    /// `retryingTransaction` and `PostgresPool.transaction`.
    public func transaction<T>(isolation: PostgresIsolation = .serializable,
                               _ body: (PostgresConnection) throws -> T) throws -> T {
        try transaction(isolation: isolation, opening: nil) { connection, _ in try body(connection) }
    }

    /// `transaction`, run again on this connection after a conflict
    /// (`PostgresRetry`, without reconnecting): for work that holds its
    /// connection, and a session lock on it, across transactions.
    public func retryingTransaction<T>(isolation: PostgresIsolation,
                                       _ body: (PostgresConnection) throws -> T) throws -> T {
        try PostgresRetry(reconnecting: false).runBlocking { try transaction(isolation: isolation, body) }
    }

    /// `transaction(isolation:_:)` whose first statement, `opening` (no
    /// parameters), is sent with BEGIN in one round trip (the simple query
    /// protocol); `body` gets its result. Under REPEATABLE READ or
    /// SERIALIZABLE that statement takes the transaction's snapshot.
    public func transaction<T>(isolation: PostgresIsolation, opening: String?,
                               _ body: (PostgresConnection, PostgresResult?) throws -> T) throws -> T {
        guard transactionStatus == .idle else {
            throw PostgresError(kind: .invalidParameter,
                                message: "transaction() on a connection that is not idle (\(transactionStatus))")
        }
        let value: T
        do {
            let begin = "BEGIN ISOLATION LEVEL \(isolation.rawValue)"
            let opened = try opening.map { try executeScript(begin + "; " + $0) } ?? query(begin)
            value = try body(self, opening == nil ? nil : opened)
        } catch {
            rollbackQuietly()
            throw error
        }
        let commit: PostgresResult
        do {
            commit = try query("COMMIT")
        } catch let error as PostgresError {
            if error.connectionBroken || isBroken {
                throw PostgresError(kind: .commitOutcomeUnknown, sqlState: error.sqlState,
                                    message: "the connection was lost while COMMIT was in flight: \(error.message)",
                                    detail: error.detail, connectionBroken: true)
            }
            rollbackQuietly()
            throw error
        }
        guard commit.commandTag == "COMMIT" else {
            throw PostgresError(kind: .transactionAborted,
                                message: "COMMIT answered \(commit.commandTag): the transaction had failed and was rolled back")
        }
        return value
    }

    /// ROLLBACK when a transaction is open and the connection usable; errors
    /// ignored (a connection that cannot roll back is broken and replaced).
    func rollbackQuietly() {
        guard !isBroken, transactionStatus == .inTransaction || transactionStatus == .inFailedTransaction else {
            return
        }
        _ = try? query("ROLLBACK")
    }

    // MARK: - Advisory locks

    /// `pg_try_advisory_lock(key)`: a session-level lock, held until
    /// `advisoryUnlock` or the end of the session (a lost connection
    /// releases it). `false` when another session holds it.
    public func tryAdvisoryLock(_ key: Int64) throws -> Bool {
        try query("SELECT pg_try_advisory_lock($1)", [.int64(key)]).bool(0, 0) ?? false
    }

    /// `pg_advisory_unlock(key)`: `false` when this session did not hold it.
    @discardableResult
    public func advisoryUnlock(_ key: Int64) throws -> Bool {
        try query("SELECT pg_advisory_unlock($1)", [.int64(key)]).bool(0, 0) ?? false
    }

    /// `pg_advisory_xact_lock(key)`: waits for the lock, held until the
    /// current transaction ends. Call inside a transaction.
    public func advisoryTransactionLock(_ key: Int64) throws {
        try query("SELECT pg_advisory_xact_lock($1)", [.int64(key)])
    }

    /// A stable advisory-lock key for a name (64-bit FNV-1a of its UTF-8),
    /// so components agree on keys without a registry of numbers.
    public static func advisoryKey(_ name: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }

    // MARK: - Pool support

    /// Whether the pool should replace this connection before its next use:
    /// broken, marked for discard, or found closed by the server while idle
    /// (reads what the server already sent, without blocking, so a FATAL
    /// and close sent to an idle session are noticed before a query is
    /// sent on it).
    func needsReplacement() -> Bool {
        guard let handle, !discardRequested else { return true }
        for _ in 0..<2 where PQstatus(handle) == CONNECTION_OK {
            if PQconsumeInput(handle) == 0 { break }
            _ = PQisBusy(handle)
        }
        return PQstatus(handle) == CONNECTION_BAD
    }

    // MARK: - Internals

    private func openHandle() throws -> OpaquePointer {
        guard let handle else {
            throw PostgresError(kind: .connectionLost, message: "the connection is closed", connectionBroken: true)
        }
        return handle
    }

    private func finish(_ result: OpaquePointer?) throws -> PostgresResult {
        let handle = try openHandle()
        guard let result else {
            let broken = PQstatus(handle) == CONNECTION_BAD
            if broken { discardRequested = true }
            throw PostgresError(kind: broken ? .connectionLost : .server, message: Self.trimmed(PQerrorMessage(handle)),
                                connectionBroken: broken)
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return PostgresResult(taking: result)
        default:
            let error = makeError(result, handle)
            PQclear(result)
            throw error
        }
    }

    private func makeError(_ result: OpaquePointer, _ handle: OpaquePointer) -> PostgresError {
        func field(_ code: Character) -> String? {
            PQresultErrorField(result, Int32(code.asciiValue!)).map { String(cString: $0) }
        }
        let sqlState = field("C")
        let broken = PQstatus(handle) == CONNECTION_BAD
        var message = field("M") ?? Self.trimmed(PQresultErrorMessage(result))
        if message.isEmpty { message = Self.trimmed(PQerrorMessage(handle)) }
        // On a standby (a failover demoted this server), in an operator
        // shutdown, or with a connection exception, reconnect next time:
        // libpq then picks the host again.
        if broken || sqlState == PostgresError.SQLState.readOnlySQLTransaction
            || sqlState?.hasPrefix("57P") == true || sqlState?.hasPrefix("08") == true {
            discardRequested = true
        }
        return PostgresError(kind: sqlState != nil ? .server : (broken ? .connectionLost : .server),
                             sqlState: sqlState, message: message, detail: field("D"),
                             constraint: field("n"), connectionBroken: broken)
    }

    private static func trimmed(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "" }
        return String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
