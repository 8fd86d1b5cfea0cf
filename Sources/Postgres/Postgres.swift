/// # Postgres: a small, safe wrapper over libpq
///
/// The foundation of the PostgreSQL backend: connections, a pool, retried
/// transactions, advisory locks and versioned migrations. It knows nothing
/// of the registry.
///
/// - `PostgresConnection`: one blocking libpq connection (`query` with
///   out-of-band parameters, `executeScript`, a one-attempt `transaction`,
///   advisory lock calls), and its round trips: `pipeline` and `queries`
///   send several statements in one (libpq's pipeline mode), `queryLater`
///   queues a write to go with the next statement or with COMMIT, and a
///   transaction's `PostgresSessionHold` goes with its BEGIN and COMMIT.
/// - `PostgresResult`: typed accessors over one statement's result.
/// - `PostgresPool`: connections on dedicated threads; `withConnection`,
///   `transaction(isolation:maxAttempts:_:)` (retried),
///   `withAdvisoryLock(_:_:)` (one holder across every node, e.g. the
///   sweeper).
/// - `PostgresMigrations`: versioned schema changes applied at start under
///   `pg_advisory_xact_lock`, so nodes starting together apply them once.
/// - `PostgresError`: SQLSTATE, message, whether the connection broke, and
///   the kinds that tell a caller what to do.
///
/// ## Why dedicated threads
///
/// libpq's calls block: `PQconnectdb` waits for the server (up to
/// `connect_timeout`), `PQexecParams` until the whole result has arrived (a
/// row lock, a synchronous standby's acknowledgement, a failover). Swift
/// concurrency runs every task on a small cooperative pool (one thread per
/// core, two here); a task that blocks one of those threads on the network
/// stalls every other task scheduled there — HTTP handlers, the group
/// commit, timers. So nothing in this module blocks a concurrency thread:
/// `PostgresPool` owns N `Thread`s, each owning one `PostgresConnection` for
/// its whole life, fed from one work queue. `withConnection` enqueues the
/// body and suspends the caller on a continuation; the connection's thread
/// runs the body (blocking there is what the thread is for) and resumes it.
/// A connection is only ever touched by its own thread, so
/// `PostgresConnection` needs no lock and is deliberately not `Sendable`.
///
/// libpq's asynchronous API would avoid the threads, but it needs an event
/// loop around the socket (poll, `PQconsumeInput`, `PQisBusy`, `PQflush`)
/// for every step, including connection set-up and multi-host failover;
/// N parked threads cost a few hundred kilobytes of stack and keep the code
/// straight-line.
///
/// ## Failures and what callers must do
///
/// - A broken connection (server restart, failover, `pg_terminate_backend`,
///   a network error) is closed and replaced by a new one on its thread's
///   next job, with backoff between failed attempts; libpq picks the host
///   again from the connection string (multi-host URIs with
///   `target_session_attrs=read-write` find the new primary), so a failover
///   needs no restart. Idle connections are checked for a close the server
///   already sent before each job, so a failover is usually absorbed without
///   a failed query.
/// - `PostgresPool.transaction` retries the whole body on serialization
///   failure (SQLSTATE 40001) and deadlock (40P01), with bounded attempts and
///   jittered backoff, and a few times when the connection broke before
///   `COMMIT` was sent (the server rolled that transaction back). The body
///   must therefore have no effect outside the database.
/// - `PostgresError.Kind.commitOutcomeUnknown`: the connection was lost
///   while `COMMIT` was in flight. The transaction may or may not have
///   committed (a synchronous commit can be durable locally and cut off
///   before its acknowledgement). It is never retried and never reported as
///   success. An HTTP caller answers **503**, not 2xx: the client retries
///   the same request with the same sequence number, and the store's
///   sequence rules make that retry safe whether or not the first attempt
///   committed (it either applies once or is recognised as already applied).
///
/// ## Parameters and results
///
/// Parameters always travel out of band (`PQsendQueryParams`, or
/// `PQsendQueryPrepared` for a statement prepared on the session), never
/// spliced into SQL: text and integers in text format, `bytea` in binary format (tokens
/// and keys need no escaping). Results come back in text format by default,
/// decoded by typed accessors (`bytea` from `\x` hex, or raw bytes when a
/// binary result format is asked for).
///
/// ## Connection defaults
///
/// Unless the connection string says otherwise, connections use
/// `connect_timeout=5` and TCP keepalives (10 s idle, 5 s interval, 3 probes)
/// so a vanished host is noticed in seconds, not minutes; the client
/// encoding is always UTF-8 and `bytea_output` is set to `hex`.
import CLibPQ

/// A parameter value. `nil` in a parameter list is SQL NULL.
public enum PostgresValue: Sendable, Hashable {
    /// Text format, type left for the server to infer (works for text,
    /// varchar, timestamps, json…). Must not contain a NUL character.
    case text(String)
    /// Text format, typed `int8`.
    case int64(Int64)
    /// Text format, typed `bool`.
    case bool(Bool)
    /// Binary format, typed `bytea`: any bytes, no escaping.
    case bytea([UInt8])
}

extension PostgresValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .int64(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

/// The isolation level of a transaction (`BEGIN ISOLATION LEVEL …`).
public enum PostgresIsolation: String, Sendable {
    case readCommitted = "READ COMMITTED"
    case repeatableRead = "REPEATABLE READ"
    case serializable = "SERIALIZABLE"
}

/// The result format asked of the server.
public enum PostgresFormat: Int32, Sendable {
    case text = 0
    case binary = 1
}

/// Every error this module throws.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// No connection could be established (libpq's message says why).
        case connectFailed
        /// The server answered with an error; `sqlState` says which.
        case server
        /// The connection broke and libpq gave no server error (a closed
        /// socket, a reset); nothing in flight committed unless it was a
        /// COMMIT, which is reported as `.commitOutcomeUnknown` instead.
        case connectionLost
        /// The connection was lost while COMMIT was in flight: the
        /// transaction may or may not have committed. Never retried; an
        /// HTTP caller answers 503 and the client's retry (same sequence)
        /// settles it.
        case commitOutcomeUnknown
        /// COMMIT was answered with ROLLBACK: an error inside the
        /// transaction was caught and the transaction had been aborted.
        /// Nothing was committed.
        case transactionAborted
        /// A value could not be decoded as the type asked for.
        case decoding
        /// A parameter cannot be sent (a NUL character in text, too many).
        case invalidParameter
        /// Not run: an earlier statement of its pipeline segment failed
        /// (`PostgresConnection.pipeline`), whose error says why.
        case pipelineAborted
        /// The pool was closed before the work could run.
        case poolClosed
        /// `PostgresMigrations` refused to apply (a pending migration older
        /// than an applied one).
        case migrationRefused
    }

    public let kind: Kind
    /// The five-character SQLSTATE for `.server` errors (and for
    /// `.commitOutcomeUnknown` when the server sent one before closing).
    public let sqlState: String?
    public let message: String
    /// `PQresultErrorField(PG_DIAG_MESSAGE_DETAIL)`, when the server sent one.
    public let detail: String?
    /// The constraint a `.server` error names (`PG_DIAG_CONSTRAINT_NAME`),
    /// e.g. which unique index a 23505 violated.
    public let constraint: String?
    /// Whether the connection was unusable after this error
    /// (`PQstatus == CONNECTION_BAD`); the pool replaces it.
    public let connectionBroken: Bool

    public init(kind: Kind, sqlState: String? = nil, message: String, detail: String? = nil,
                constraint: String? = nil, connectionBroken: Bool = false) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.constraint = constraint
        self.connectionBroken = connectionBroken
    }

    /// SQLSTATEs this module acts on.
    public enum SQLState {
        public static let uniqueViolation = "23505"
        public static let serializationFailure = "40001"
        public static let deadlockDetected = "40P01"
        public static let readOnlySQLTransaction = "25006"
        public static let syntaxError = "42601"
        public static let adminShutdown = "57P01"
    }

    /// 40001 or 40P01: the transaction was rolled back and may simply be run again.
    public var isSerializationFailure: Bool {
        kind == .server && (sqlState == SQLState.serializationFailure || sqlState == SQLState.deadlockDetected)
    }

    /// A unique violation (23505), optionally of the named constraint.
    public func isUniqueViolation(constraint name: String? = nil) -> Bool {
        kind == .server && sqlState == SQLState.uniqueViolation && (name == nil || constraint == name)
    }

    public var description: String {
        var text = "PostgreSQL \(kind)"
        if let sqlState { text += " \(sqlState)" }
        text += ": \(message)"
        if let detail { text += " (\(detail))" }
        if connectionBroken { text += " [connection broken]" }
        return text
    }
}
