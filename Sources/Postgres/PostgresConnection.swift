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
    /// Statements prepared on this session, by their SQL text (see `preparedName`).
    var prepared: [String: String] = [:]
    /// Statements prepared so far, failed ones included: the next name's number.
    var preparedCount = 0
    /// What `queryLater` queued, sent ahead of the next statement or with COMMIT.
    var deferred: [EncodedStatement] = []
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
    /// in binary format. Statements queued by `queryLater` go ahead of it in
    /// the same round trip, and the first of them to fail is what throws.
    /// Throws `PostgresError` (`.server` with its SQLSTATE,
    /// `.connectionLost`, `.invalidParameter`).
    @discardableResult
    public func query(_ sql: String, _ parameters: [PostgresValue?] = [],
                      resultFormat: PostgresFormat = .text) throws -> PostgresResult {
        try queries([PostgresStatement(sql, parameters, resultFormat: resultFormat)])[0]
    }

    /// Queues a statement whose result the caller does not read (a write):
    /// it is sent ahead of the next `query` or `pipeline`, or with the
    /// transaction's COMMIT, in that round trip, instead of taking one of
    /// its own. Only inside a transaction, whose outcome is all its
    /// statements': the statement's error (a conflict, a unique violation)
    /// is thrown by the call that sends it, and the transaction has failed
    /// all the same. `.invalidParameter` is thrown here, before anything is
    /// sent.
    public func queryLater(_ sql: String, _ parameters: [PostgresValue?] = []) throws {
        guard transactionStatus == .inTransaction else {
            throw PostgresError(kind: .invalidParameter,
                                message: "queryLater outside a transaction (\(transactionStatus)): \(sql)")
        }
        deferred.append(try EncodedStatement(PostgresStatement(sql, parameters)))
    }

    /// Runs a script of one or more statements separated by semicolons (the
    /// simple query protocol; no parameters). Inside an open transaction
    /// they run in it; otherwise the script is one implicit transaction.
    /// Returns the last statement's result.
    @discardableResult
    public func executeScript(_ sql: String) throws -> PostgresResult {
        if !deferred.isEmpty { _ = try pipeline([]) }
        let handle = try openHandle()
        return try finish(PQexec(handle, sql))
    }

    // MARK: - Transactions

    /// `BEGIN ISOLATION LEVEL …`, `body`, `COMMIT`, on this connection, once.
    /// The body throwing rolls back and rethrows. A COMMIT the server
    /// answers with an error rolled back (rethrown; 40001 may come here);
    /// a COMMIT answered with ROLLBACK (the body swallowed an error) throws
    /// `.transactionAborted`; a connection lost while COMMIT was in flight
    /// throws `.commitOutcomeUnknown`. Statements the body queued with
    /// `queryLater` go with COMMIT; one of them failing is thrown as it is
    /// (nothing committed). No retries here: see `retryingTransaction` and
    /// `PostgresPool.transaction`.
    public func transaction<T>(isolation: PostgresIsolation = .serializable,
                               _ body: (PostgresConnection) throws -> T) throws -> T {
        try transaction(isolation: isolation, holding: nil, opening: []) { connection, _, _ in try body(connection) }
    }

    /// `transaction`, run again on this connection after a conflict
    /// (`PostgresRetry`, without reconnecting): for work that holds its
    /// connection, and a session lock on it, across transactions.
    public func retryingTransaction<T>(isolation: PostgresIsolation,
                                       _ body: (PostgresConnection) throws -> T) throws -> T {
        try PostgresRetry(reconnecting: false).runBlocking { try transaction(isolation: isolation, body) }
    }

    /// `transaction(isolation:_:)` in as few round trips as the statements
    /// allow. The first sends `hold.take` in a transaction of its own
    /// (`BEGIN` … `COMMIT`), then BEGIN and the `opening` reads, so the
    /// server has taken the hold, a session lock, before BEGIN opens the
    /// transaction and the first of `opening` takes its snapshot under
    /// REPEATABLE READ or SERIALIZABLE. (Not in one transaction: its
    /// snapshot would be taken as the lock's statement starts, before the
    /// lock is granted.) The last sends the body's queued writes, COMMIT and
    /// `hold.release` (ROLLBACK and the release when the body throws). Each
    /// round trip is one pipeline segment, so libpq sends it in one write
    /// and the server answers it in one. `body` gets the results of
    /// `hold.take` and of each `opening` statement, in order. A `take` that
    /// fails closes the connection (what it took, if anything, goes with
    /// the session), and so does a release that does not answer true;
    /// either way the transaction's outcome stands. An `opening` statement
    /// that fails fails the transaction (rolled back, its error thrown).
    public func transaction<T>(isolation: PostgresIsolation, holding hold: PostgresSessionHold?,
                               opening: [PostgresStatement],
                               _ body: (PostgresConnection, _ held: PostgresResult?, _ opened: [PostgresResult]) throws -> T
    ) throws -> T {
        guard transactionStatus == .idle, deferred.isEmpty else {
            throw PostgresError(kind: .invalidParameter,
                                message: "transaction() on a connection that is not idle (\(transactionStatus))")
        }
        let taking = hold.map { [Self.beginHold, $0.take, Self.commitHold] } ?? []
        let started = try pipeline([taking + [PostgresStatement("BEGIN ISOLATION LEVEL \(isolation.rawValue)")] + opening])[0]
        var held: PostgresResult?
        if hold != nil {
            switch started[1] {
            case .success(let result): held = result
            case .failure(let error):
                close()
                throw error
            }
        }
        let release = held.flatMap { held in hold.map { $0.release(held) } }
        let begun = started[taking.count...]
        let value: T
        do {
            if let failure = Self.firstFailure(Array(started)) { throw failure }
            let opened = try begun.dropFirst().map { try $0.get() }
            value = try body(self, held, opened)
        } catch {
            rollback(releasing: release)
            throw error
        }
        try commit(releasing: release)
        return value
    }

    /// The transaction `hold.take` runs in.
    private static let beginHold = PostgresStatement("BEGIN ISOLATION LEVEL READ COMMITTED")
    private static let commitHold = PostgresStatement("COMMIT")

    /// Sends the queued writes, COMMIT and `release` in one round trip (one
    /// segment: a COMMIT refused skips the release, which `rollback` then
    /// sends). Which statement failed tells what happened: a queued write
    /// refused (COMMIT skipped: nothing committed, rolled back, its error
    /// thrown), COMMIT refused (rolled back by the server), or no answer to
    /// COMMIT (`.commitOutcomeUnknown`).
    private func commit(releasing release: PostgresStatement?) throws {
        let segment = takeDeferred() + [try EncodedStatement(PostgresStatement("COMMIT"))]
            + (try release.map { [try EncodedStatement($0)] } ?? [])
        let outcomes = try run([segment])[0]
        let written = release == nil ? outcomes : Array(outcomes.dropLast())
        let released = release == nil ? nil : outcomes[outcomes.count - 1]
        switch written[written.count - 1] {
        case .success(let commit):
            settle(released)
            guard commit.commandTag == "COMMIT" else {
                throw PostgresError(kind: .transactionAborted,
                                    message: "COMMIT answered \(commit.commandTag): the transaction had failed and was rolled back")
            }
        case .failure(let error):
            let cause = Self.firstFailure(written) ?? error
            let commitFailed = written.dropLast().allSatisfy { if case .success = $0 { true } else { false } }
            // No answer to a queued write, or a COMMIT cut off: the server may have committed.
            if cause.kind == .connectionLost || (commitFailed && (cause.connectionBroken || isBroken)) {
                close()
                throw PostgresError(kind: .commitOutcomeUnknown, sqlState: cause.sqlState,
                                    message: "the connection was lost while COMMIT was in flight: \(cause.message)",
                                    detail: cause.detail, connectionBroken: true)
            }
            // Nothing committed, and the release was skipped with COMMIT:
            // roll back what is left open and release.
            rollback(releasing: release)
            throw cause
        }
    }

    /// ROLLBACK, when a transaction is open, and `release` after a sync
    /// point in the same round trip; the queued writes are dropped. Errors
    /// ignored: a connection that cannot roll back is broken and replaced.
    private func rollback(releasing release: PostgresStatement?) {
        deferred.removeAll()
        guard let release else { return rollbackQuietly() }
        guard !isBroken else { return close() }
        let open = transactionStatus == .inTransaction || transactionStatus == .inFailedTransaction
        let segments = (open ? [[PostgresStatement("ROLLBACK")]] : []) + [[release]]
        guard let outcomes = try? pipeline(segments) else { return close() }
        settle(outcomes[outcomes.count - 1][0])
    }

    /// Closes the connection unless a release answered true.
    private func settle(_ released: Result<PostgresResult, PostgresError>?) {
        guard let released else { return }
        if (try? released.get().bool(0, 0)) != true { close() }
    }

    /// ROLLBACK when a transaction is open and the connection usable; errors
    /// ignored (a connection that cannot roll back is broken and replaced).
    /// Queued writes are dropped.
    func rollbackQuietly() {
        deferred.removeAll()
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

    func openHandle() throws -> OpaquePointer {
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

    func makeError(_ result: OpaquePointer, _ handle: OpaquePointer) -> PostgresError {
        func field(_ code: Character) -> String? {
            PQresultErrorField(result, Int32(code.asciiValue!)).map { String(cString: $0) }
        }
        let sqlState = field("C")
        // The server ends the session after a FATAL error: libpq may not have
        // read the close yet (the next answer of a pipeline would find it).
        let broken = PQstatus(handle) == CONNECTION_BAD || ["FATAL", "PANIC"].contains(field("V"))
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

    static func trimmed(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "" }
        return String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
