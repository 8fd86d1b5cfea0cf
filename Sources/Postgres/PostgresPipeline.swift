import CLibPQ

/// One statement to send: SQL with out-of-band parameters, as `query` takes them.
public struct PostgresStatement: Sendable {
    public var sql: String
    public var parameters: [PostgresValue?]
    public var resultFormat: PostgresFormat

    public init(_ sql: String, _ parameters: [PostgresValue?] = [], resultFormat: PostgresFormat = .text) {
        self.sql = sql
        self.parameters = parameters
        self.resultFormat = resultFormat
    }
}

/// What a transaction holds beyond itself, typically session advisory
/// locks: taken just before its BEGIN and released just after its COMMIT or
/// ROLLBACK, each in the same round trip as its neighbour
/// (`PostgresConnection.transaction(isolation:holding:opening:_:)`).
public struct PostgresSessionHold: Sendable {
    /// Runs in a transaction of its own before BEGIN; its result goes to the body.
    public var take: PostgresStatement
    /// Given `take`'s result, releases what it took; its first column must
    /// answer true, or the connection is closed (releasing everything).
    public var release: @Sendable (PostgresResult) -> PostgresStatement

    public init(take: PostgresStatement, release: @escaping @Sendable (PostgresResult) -> PostgresStatement) {
        self.take = take
        self.release = release
    }
}

extension PostgresConnection {
    /// Sends every statement in one round trip (libpq's pipeline mode) and
    /// returns each one's outcome, in order. Each inner array is a segment
    /// that ends in a sync point: an error fails its statement and skips
    /// the rest of its segment (`.pipelineAborted`), and the next segment
    /// runs all the same. Outside a transaction each segment is one
    /// implicit transaction; inside one, an error leaves it failed for the
    /// segments after. Statements queued by `queryLater` go first; the
    /// first of them to fail is thrown.
    ///
    /// A statement that would run prepared (see `query`) and is not yet is
    /// prepared in the same round trip, ahead of it. When the connection
    /// breaks, the statements left without an answer fail with
    /// `.connectionLost` (one that was sent may have run). Throws only what
    /// stops anything from being sent: a parameter that cannot be sent
    /// (`.invalidParameter`), a closed connection. The connection is left
    /// out of pipeline mode, or closed.
    public func pipeline(_ segments: [[PostgresStatement]]) throws -> [[Result<PostgresResult, PostgresError>]] {
        var encoded = try segments.map { try $0.map(EncodedStatement.init) }
        let queued = takeDeferred()
        guard !queued.isEmpty else { return try run(encoded) }
        if encoded.isEmpty { encoded = [[]] }
        encoded[0] = queued + encoded[0]
        var outcomes = try run(encoded)
        // The transaction has failed with it: nothing after it means anything.
        if let failure = Self.firstFailure(Array(outcomes[0].prefix(queued.count))) { throw failure }
        outcomes[0].removeFirst(queued.count)
        return outcomes
    }

    /// Several statements in one round trip (one segment, after what
    /// `queryLater` queued), every result read: the first to fail throws.
    public func queries(_ statements: [PostgresStatement]) throws -> [PostgresResult] {
        let outcomes = try pipeline([statements])[0]
        if let failure = Self.firstFailure(outcomes) { throw failure }
        return try outcomes.map { try $0.get() }
    }

    /// The first failure among `outcomes`: the error to throw for a segment.
    static func firstFailure(_ outcomes: [Result<PostgresResult, PostgresError>]) -> PostgresError? {
        for outcome in outcomes { if case .failure(let error) = outcome { return error } }
        return nil
    }

    /// The statements `queryLater` queued, now to be sent (or dropped).
    func takeDeferred() -> [EncodedStatement] {
        defer { deferred.removeAll() }
        return deferred
    }

    /// The pipeline itself: sends every segment with a sync point after
    /// each, then reads the answers in order.
    func run(_ segments: [[EncodedStatement]]) throws -> [[Result<PostgresResult, PostgresError>]] {
        let handle = try openHandle()
        let sent = send(segments, handle)
        guard sent.error == nil else {
            close()
            return lost(segments, sent.error!)
        }
        var outcomes: [[Result<PostgresResult, PostgresError>]] = []
        for (segment, statements) in segments.enumerated() {
            var answers: [Result<PostgresResult, PostgresError>] = []
            for (index, statement) in statements.enumerated() {
                let parse = sent.parsed[segment][index] ? answer(handle) : nil
                let own = answer(handle)
                // A statement whose Parse failed was skipped: the Parse's error is its own.
                if case .failure(let error)? = parse {
                    prepared[statement.sql] = nil
                    answers.append(.failure(error))
                } else {
                    answers.append(own)
                }
            }
            outcomes.append(answers)
            guard syncReached(handle) else {
                // Broken, or an answer out of step: nothing later can be trusted.
                let error = lostError(handle)
                close()
                return outcomes + lost(Array(segments[(segment + 1)...]), error)
            }
        }
        if PQexitPipelineMode(handle) != 1 { close() }
        return outcomes
    }

    /// Queues every statement (and a Parse ahead of each one not prepared
    /// yet) and a sync point after each segment, then flushes; `parsed`
    /// says which statements had a Parse sent.
    private func send(_ segments: [[EncodedStatement]], _ handle: OpaquePointer)
        -> (parsed: [[Bool]], error: PostgresError?) {
        guard PQenterPipelineMode(handle) == 1 else { return ([], lostError(handle)) }
        var parsed: [[Bool]] = []
        for statements in segments {
            var flags: [Bool] = []
            for statement in statements {
                let name = preparedName(statement)
                flags.append(name.new)
                let queued = statement.withValues { values in
                    if name.new, PQsendPrepare(handle, name.name, statement.sql, statement.count, statement.types) != 1 {
                        return false
                    }
                    if let prepared = name.name {
                        return PQsendQueryPrepared(handle, prepared, statement.count, values, statement.lengths,
                                                   statement.formats, statement.resultFormat) == 1
                    }
                    return PQsendQueryParams(handle, statement.sql, statement.count, statement.types, values,
                                             statement.lengths, statement.formats, statement.resultFormat) == 1
                }
                guard queued else { return (parsed, lostError(handle)) }
            }
            parsed.append(flags)
            guard PQpipelineSync(handle) == 1 else { return (parsed, lostError(handle)) }
        }
        return (parsed, nil)
    }

    /// The name `statement` runs prepared under on this session, and
    /// whether it is to be prepared now (remembered at once, forgotten if
    /// the Parse fails). A statement with parameters runs prepared: the
    /// server parses and plans it once per session instead of on every
    /// call, which was most of its CPU per registry write (about ten short
    /// statements each). No name (run it unprepared) for a statement
    /// without parameters, or once the session holds
    /// `maxPreparedStatements`. A prepared statement outlives a rolled-back
    /// transaction and goes with its session; the server re-plans it after
    /// a schema change.
    private func preparedName(_ statement: EncodedStatement) -> (name: String?, new: Bool) {
        guard statement.count > 0 else { return (nil, false) }
        if let name = prepared[statement.sql] { return (name, false) }
        guard prepared.count < Self.maxPreparedStatements else { return (nil, false) }
        // Never a name used before: one whose Parse failed may stand beside later ones.
        preparedCount += 1
        let name = "registryd_\(preparedCount)"
        prepared[statement.sql] = name
        return (name, true)
    }

    /// The answer to the next statement in the pipeline, read to the end of
    /// its results.
    private func answer(_ handle: OpaquePointer) -> Result<PostgresResult, PostgresError> {
        guard let result = PQgetResult(handle) else { return .failure(lostError(handle)) }
        while let extra = PQgetResult(handle) { PQclear(extra) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return .success(PostgresResult(taking: result))
        case PGRES_PIPELINE_ABORTED:
            PQclear(result)
            return .failure(PostgresError(kind: .pipelineAborted,
                                          message: "not run: an earlier statement of its pipeline segment failed"))
        default:
            let error = makeError(result, handle)
            PQclear(result)
            return .failure(error)
        }
    }

    /// Reads the sync point that ends a segment; false when something else
    /// (or nothing: a broken connection) came instead.
    private func syncReached(_ handle: OpaquePointer) -> Bool {
        guard let result = PQgetResult(handle) else { return false }
        defer { PQclear(result) }
        return PQresultStatus(result) == PGRES_PIPELINE_SYNC
    }

    private func lostError(_ handle: OpaquePointer) -> PostgresError {
        let message = Self.trimmed(PQerrorMessage(handle))
        return PostgresError(kind: .connectionLost, message: message.isEmpty ? "the connection broke" : message,
                             connectionBroken: true)
    }

    private func lost(_ segments: [[EncodedStatement]], _ error: PostgresError)
        -> [[Result<PostgresResult, PostgresError>]] {
        segments.map { $0.map { _ in .failure(error) } }
    }
}

/// A statement with its parameters in libpq's form, ready to send; owns the
/// parameter buffers.
final class EncodedStatement {
    let sql: String
    let types: [Oid]
    let lengths: [Int32]
    let formats: [Int32]
    let resultFormat: Int32
    private let buffers: [UnsafeMutablePointer<CChar>?]

    var count: Int32 { Int32(types.count) }

    /// Text, integers and booleans in text format, `bytea` in binary
    /// format; throws `.invalidParameter` for what cannot be sent.
    init(_ statement: PostgresStatement) throws {
        let parameters = statement.parameters
        guard parameters.count <= Int(UInt16.max) else {
            throw PostgresError(kind: .invalidParameter, message: "\(parameters.count) parameters (at most 65535)")
        }
        var types = [Oid](), lengths = [Int32](), formats = [Int32]()
        var buffers = [UnsafeMutablePointer<CChar>?]()
        types.reserveCapacity(parameters.count)
        lengths.reserveCapacity(parameters.count)
        formats.reserveCapacity(parameters.count)
        buffers.reserveCapacity(parameters.count)
        var built = false
        defer { if !built { buffers.forEach { $0?.deallocate() } } }

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
        sql = statement.sql
        self.types = types
        self.lengths = lengths
        self.formats = formats
        self.buffers = buffers
        resultFormat = statement.resultFormat.rawValue
        built = true
    }

    deinit { buffers.forEach { $0?.deallocate() } }

    func withValues<R>(_ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        body(buffers.map { $0.map { UnsafePointer($0) } })
    }
}
