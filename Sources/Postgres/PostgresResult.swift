import CLibPQ

/// The successful result of one statement. Owns its `PGresult` (cleared on
/// deinit); a `PGresult` is read-only once made, so a result may be read
/// from any thread after the connection's thread produced it.
///
/// Accessors return `nil` for SQL NULL and throw `.decoding` when a value
/// does not have the asked-for shape. Rows and columns are 0-based; an
/// index out of range is a programming error (precondition).
public final class PostgresResult: @unchecked Sendable {
    private let result: OpaquePointer

    init(taking result: OpaquePointer) {
        self.result = result
    }

    deinit { PQclear(result) }

    /// Rows returned (0 for commands).
    public var rowCount: Int { Int(PQntuples(result)) }

    public var columnCount: Int { Int(PQnfields(result)) }

    /// The command tag, e.g. `INSERT 0 1`, `UPDATE 3`, `SELECT 2`, `COMMIT`.
    public var commandTag: String { String(cString: PQcmdStatus(result)) }

    /// Rows affected by INSERT/UPDATE/DELETE/MERGE/SELECT/MOVE/FETCH/COPY (0 otherwise).
    public var affectedRows: Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }

    public func columnName(_ column: Int) -> String {
        checkColumn(column)
        return String(cString: PQfname(result, Int32(column)))
    }

    /// The index of the column named `name` (exact, case-sensitive match), or nil.
    public func column(named name: String) -> Int? {
        (0..<columnCount).first { columnName($0) == name }
    }

    /// The column's type OID (`PQftype`): 20 int8, 23 int4, 25 text, 17 bytea, 16 bool…
    public func columnType(_ column: Int) -> UInt32 {
        checkColumn(column)
        return PQftype(result, Int32(column))
    }

    public func isNull(_ row: Int, _ column: Int) -> Bool {
        check(row, column)
        return PQgetisnull(result, Int32(row), Int32(column)) == 1
    }

    /// The value as UTF-8 text (any type, in text format; text types in binary format).
    public func string(_ row: Int, _ column: Int) throws -> String? {
        guard let bytes = raw(row, column) else { return nil }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw decoding(row, column, "is not valid UTF-8")
        }
        return text
    }

    /// An integer column (int2, int4, int8, or any text that is a decimal integer).
    public func int64(_ row: Int, _ column: Int) throws -> Int64? {
        guard let bytes = raw(row, column) else { return nil }
        if isBinary(column) {
            switch (columnType(column), bytes.count) {
            case (21, 2): return Int64(Int16(bitPattern: UInt16(bigEndianBytes: bytes)))
            case (23, 4): return Int64(Int32(bitPattern: UInt32(bigEndianBytes: bytes)))
            case (20, 8): return Int64(bitPattern: UInt64(bigEndianBytes: bytes))
            default: throw decoding(row, column, "is not a binary int2, int4 or int8 (type \(columnType(column)))")
            }
        }
        guard let value = Int64(String(decoding: bytes, as: UTF8.self)) else {
            throw decoding(row, column, "is not a decimal integer")
        }
        return value
    }

    /// A boolean column (`t`/`f` in text format, one byte in binary format).
    public func bool(_ row: Int, _ column: Int) throws -> Bool? {
        guard let bytes = raw(row, column) else { return nil }
        if isBinary(column) {
            guard bytes.count == 1 else { throw decoding(row, column, "is not a binary bool") }
            return bytes[0] != 0
        }
        switch bytes {
        case [UInt8(ascii: "t")]: return true
        case [UInt8(ascii: "f")]: return false
        default: throw decoding(row, column, "is not a bool (t or f)")
        }
    }

    /// A `bytea` column: raw bytes in binary format, `\x` followed by hex
    /// digits in text format (`bytea_output = hex`, which every connection sets).
    public func bytes(_ row: Int, _ column: Int) throws -> [UInt8]? {
        guard let bytes = raw(row, column) else { return nil }
        if isBinary(column) { return bytes }
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x"),
              bytes.count % 2 == 0 else {
            throw decoding(row, column, "is not bytea in hex format (\\x…)")
        }
        var out = [UInt8]()
        out.reserveCapacity((bytes.count - 2) / 2)
        var index = 2
        while index < bytes.count {
            guard let high = Self.hexValue(bytes[index]), let low = Self.hexValue(bytes[index + 1]) else {
                throw decoding(row, column, "has a non-hex digit in bytea")
            }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    // MARK: - Internals

    private func raw(_ row: Int, _ column: Int) -> [UInt8]? {
        check(row, column)
        let r = Int32(row), c = Int32(column)
        if PQgetisnull(result, r, c) == 1 { return nil }
        let length = Int(PQgetlength(result, r, c))
        guard length > 0, let value = PQgetvalue(result, r, c) else { return [] }
        return value.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    private func isBinary(_ column: Int) -> Bool { PQfformat(result, Int32(column)) == 1 }

    private func check(_ row: Int, _ column: Int) {
        precondition(row >= 0 && row < rowCount, "row \(row) out of range 0..<\(rowCount)")
        checkColumn(column)
    }

    private func checkColumn(_ column: Int) {
        precondition(column >= 0 && column < columnCount, "column \(column) out of range 0..<\(columnCount)")
    }

    private func decoding(_ row: Int, _ column: Int, _ what: String) -> PostgresError {
        PostgresError(kind: .decoding, message: "row \(row), column \(column) (\(columnName(column))) \(what)")
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

private extension FixedWidthInteger {
    /// A big-endian integer from exactly `MemoryLayout<Self>.size` bytes.
    init(bigEndianBytes bytes: [UInt8]) {
        var value: Self = 0
        for byte in bytes { value = value << 8 | Self(byte) }
        self = value
    }
}
