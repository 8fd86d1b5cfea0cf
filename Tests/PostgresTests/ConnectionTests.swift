import Foundation
import Postgres
import Testing

/// One blocking connection: parameters, typed results, errors.
@Suite(.enabled(if: TestServer.isAvailable, TestServer.skipReason))
struct ConnectionTests {
    @Test func parametersRoundTripAsTextIntegerByteaAndNull() throws {
        let connection = try TestServer.connect()
        let table = TestServer.uniqueName("roundtrip")
        try connection.query("CREATE TABLE \(table) (id int8 PRIMARY KEY, t text, n int8, b bytea, f bool)")
        defer { _ = try? connection.query("DROP TABLE \(table)") }

        let allBytes = (0...255).map { UInt8($0) }
        let text = "héllo, 世界 🚀 'quoted' \"double\" \\ backslash; DROP TABLE x; --"
        let rows: [[PostgresValue?]] = [
            [1, .text(text), .int64(.min), .bytea(allBytes), true],
            [2, "", .int64(.max), .bytea([]), false],
            [3, nil, nil, nil, nil],
        ]
        for row in rows {
            let inserted = try connection.query("INSERT INTO \(table) VALUES ($1, $2, $3, $4, $5)", row)
            #expect(inserted.affectedRows == 1)
            #expect(inserted.commandTag == "INSERT 0 1")
        }

        for format in [PostgresFormat.text, .binary] {
            let result = try connection.query("SELECT id, t, n, b, f FROM \(table) ORDER BY id", resultFormat: format)
            #expect(result.rowCount == 3)
            #expect(result.columnCount == 5)
            #expect(result.column(named: "b") == 3)
            #expect(try result.int64(0, 0) == 1)
            #expect(try result.string(0, 1) == text)
            #expect(try result.int64(0, 2) == .min)
            #expect(try result.bytes(0, 3) == allBytes)
            #expect(try result.bool(0, 4) == true)
            #expect(try result.string(1, 1) == "")
            #expect(try result.int64(1, 2) == .max)
            #expect(try result.bytes(1, 3) == [])
            #expect(try result.bool(1, 4) == false)
            for column in 1..<5 {
                #expect(result.isNull(2, column))
                #expect(try result.string(2, column) == nil)
            }
            #expect(try result.int64(2, 2) == nil)
            #expect(try result.bytes(2, 3) == nil)
        }

        // Parameters compare as values, never as SQL: the quote-laden text matches itself only.
        let matched = try connection.query("SELECT id FROM \(table) WHERE t = $1 AND b = $2", [.text(text), .bytea(allBytes)])
        #expect(matched.rowCount == 1)
        #expect(try matched.int64(0, 0) == 1)
        // bytea with a NUL in the middle is carried whole (binary parameter format).
        let echoed = try connection.query("SELECT $1::bytea, length($1::bytea)", [.bytea([0, 0, 65, 0])])
        #expect(try echoed.bytes(0, 0) == [0, 0, 65, 0])
        #expect(try echoed.int64(0, 1) == 4)
    }

    @Test func binaryIntegersOfEveryWidthDecode() throws {
        let connection = try TestServer.connect()
        let result = try connection.query("SELECT $1::int2, $2::int4, $3::int8",
                                          [.int64(-2), .int64(-70_000), .int64(1 << 40)], resultFormat: .binary)
        #expect(try result.int64(0, 0) == -2)
        #expect(try result.int64(0, 1) == -70_000)
        #expect(try result.int64(0, 2) == 1 << 40)
    }

    @Test func aTextParameterWithNulIsRefusedNotTruncated() throws {
        let connection = try TestServer.connect()
        #expect { try connection.query("SELECT $1::text", [.text("ab\u{0}cd")]) } throws: { error in
            (error as? PostgresError)?.kind == .invalidParameter
        }
        // The connection is still usable.
        #expect(try connection.query("SELECT 1").int64(0, 0) == 1)
    }

    @Test func decodingAValueAsTheWrongTypeThrows() throws {
        let connection = try TestServer.connect()
        let result = try connection.query("SELECT 'abc'::text, 'x'::text")
        #expect { try result.int64(0, 0) } throws: { ($0 as? PostgresError)?.kind == .decoding }
        #expect { try result.bytes(0, 0) } throws: { ($0 as? PostgresError)?.kind == .decoding }
        #expect { try result.bool(0, 1) } throws: { ($0 as? PostgresError)?.kind == .decoding }
        let edges = try connection.query("""
            SELECT '-', '+7', '9223372036854775808', '-9223372036854775809', '1 ', '\\x0g', '\\xABcd', 'é'
            """)
        for column in [0, 3, 4] {
            #expect { try edges.int64(0, column) } throws: { ($0 as? PostgresError)?.kind == .decoding }
        }
        #expect(try edges.int64(0, 1) == 7)
        #expect { try edges.int64(0, 2) } throws: { ($0 as? PostgresError)?.kind == .decoding }
        #expect { try edges.bytes(0, 5) } throws: { ($0 as? PostgresError)?.kind == .decoding }
        #expect(try edges.bytes(0, 6) == [0xab, 0xcd])
        #expect(try edges.string(0, 7) == "é")
    }

    @Test func aUniqueViolationCarriesSQLState23505AndTheConstraint() throws {
        let connection = try TestServer.connect()
        let table = TestServer.uniqueName("unique")
        try connection.query("CREATE TABLE \(table) (k text CONSTRAINT \(table)_k UNIQUE)")
        defer { _ = try? connection.query("DROP TABLE \(table)") }
        try connection.query("INSERT INTO \(table) VALUES ($1)", ["a"])
        do {
            try connection.query("INSERT INTO \(table) VALUES ($1)", ["a"])
            Issue.record("the duplicate insert succeeded")
        } catch let error as PostgresError {
            #expect(error.kind == .server)
            #expect(error.sqlState == "23505")
            #expect(error.isUniqueViolation(constraint: "\(table)_k"))
            #expect(!error.connectionBroken)
            #expect(error.message.contains("duplicate key"))
            #expect(error.detail?.contains("(k)=(a)") == true)
        }
        #expect(try connection.query("SELECT count(*) FROM \(table)").int64(0, 0) == 1)
    }

    @Test func aSyntaxErrorCarriesSQLState42601() throws {
        let connection = try TestServer.connect()
        do {
            try connection.query("SELEC 1")
            Issue.record("the malformed statement succeeded")
        } catch let error as PostgresError {
            #expect(error.kind == .server)
            #expect(error.sqlState == PostgresError.SQLState.syntaxError)
            #expect(!error.connectionBroken)
        }
        #expect(!connection.isBroken)
        #expect(connection.transactionStatus == .idle)
    }

    @Test func aScriptRunsSeveralStatements() throws {
        let connection = try TestServer.connect()
        let table = TestServer.uniqueName("script")
        let last = try connection.executeScript("""
            CREATE TABLE \(table) (v int8);
            INSERT INTO \(table) VALUES (1), (2);
            SELECT sum(v) FROM \(table);
            """)
        defer { _ = try? connection.query("DROP TABLE \(table)") }
        #expect(try last.int64(0, 0) == 3)
    }

    @Test func aMultiHostURIWithTargetSessionAttrsPassesThroughToLibpq() throws {
        // The first host refuses; libpq goes on to the next one, a primary (read-write).
        let url = try #require(TestServer.url)
        let hostPort = try #require(url.split(separator: "@").last?.split(separator: "/").first)
        let port = try #require(hostPort.split(separator: ":").last)
        let connection = try PostgresConnection(
            "postgresql://postgres@127.0.0.1:1,\(hostPort)/registry?target_session_attrs=read-write&connect_timeout=2")
        #expect(connection.port == String(port))
        #expect(try connection.query("SELECT pg_is_in_recovery()").bool(0, 0) == false)
    }

    @Test func aBadConnectionStringFailsToConnect() throws {
        // Port 1 on loopback: nothing listens there.
        #expect { try PostgresConnection("postgresql://postgres@127.0.0.1:1/registry?connect_timeout=2") } throws: {
            ($0 as? PostgresError)?.kind == .connectFailed
        }
    }
}

/// Needs no server.
@Test func advisoryKeysAreStableAndDistinct() {
    #expect(PostgresConnection.advisoryKey("registryd.sweeper") == PostgresConnection.advisoryKey("registryd.sweeper"))
    #expect(PostgresConnection.advisoryKey("registryd.sweeper") != PostgresConnection.advisoryKey("registryd.migrations"))
    // FNV-1a 64 of the empty string is its offset basis; of "a", the published test vector.
    #expect(PostgresConnection.advisoryKey("") == Int64(bitPattern: 0xcbf2_9ce4_8422_2325))
    #expect(PostgresConnection.advisoryKey("a") == Int64(bitPattern: 0xaf63_dc4c_8601_ec8c))
}
