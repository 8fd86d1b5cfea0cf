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
        try withRaw(row, column) { bytes in
            guard let bytes else { return nil }
            // ASCII (nearly every value) is valid UTF-8 as it stands: decoding it repairs nothing.
            if !bytes.contains(where: { $0 >= 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw decoding(row, column, "is not valid UTF-8")
            }
            return text
        }
    }

    /// An integer column (int2, int4, int8, or any text that is a decimal integer).
    public func int64(_ row: Int, _ column: Int) throws -> Int64? {
        if isBinary(column) {
            guard let bytes = raw(row, column) else { return nil }
            switch (columnType(column), bytes.count) {
            case (21, 2): return Int64(Int16(bitPattern: UInt16(bigEndianBytes: bytes)))
            case (23, 4): return Int64(Int32(bitPattern: UInt32(bigEndianBytes: bytes)))
            case (20, 8): return Int64(bitPattern: UInt64(bigEndianBytes: bytes))
            default: throw decoding(row, column, "is not a binary int2, int4 or int8 (type \(columnType(column)))")
            }
        }
        return try withRaw(row, column) { bytes in
            guard let bytes else { return nil }
            guard let value = Self.decimal(bytes) else { throw decoding(row, column, "is not a decimal integer") }
            return value
        }
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
        if isBinary(column) { return raw(row, column) }
        return try withRaw(row, column) { text -> [UInt8]? in
            guard let text else { return nil }
            guard text.count >= 2, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x"), text.count % 2 == 0 else {
                throw decoding(row, column, "is not bytea in hex format (\\x…)")
            }
            var valid = true
            let out = Self.hexDigits.withUnsafeBufferPointer { digits in
                [UInt8](unsafeUninitializedCapacity: (text.count - 2) / 2) { out, count in
                    var index = 2
                    while index < text.count {
                        let high = digits[Int(text[index])], low = digits[Int(text[index + 1])]
                        guard high < 16, low < 16 else {
                            valid = false
                            break
                        }
                        out[count] = high << 4 | low
                        count += 1
                        index += 2
                    }
                }
            }
            guard valid else { throw decoding(row, column, "has a non-hex digit in bytea") }
            return out
        }
    }

    // MARK: - Internals

    private func raw(_ row: Int, _ column: Int) -> [UInt8]? {
        withRaw(row, column) { $0.map(Array.init) }
    }

    /// The value's bytes as libpq holds them (valid while this result
    /// lives), without copying them first; `nil` for NULL.
    private func withRaw<R>(_ row: Int, _ column: Int, _ body: (UnsafeBufferPointer<UInt8>?) throws -> R) rethrows -> R {
        check(row, column)
        let r = Int32(row), c = Int32(column)
        if PQgetisnull(result, r, c) == 1 { return try body(nil) }
        let length = Int(PQgetlength(result, r, c))
        guard length > 0, let value = PQgetvalue(result, r, c) else { return try body(UnsafeBufferPointer(start: nil, count: 0)) }
        return try value.withMemoryRebound(to: UInt8.self, capacity: length) {
            try body(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    /// A decimal integer in text (an optional sign, then digits), as
    /// `Int64(String)` reads it; nil when it is not one or overflows.
    private static func decimal(_ text: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard let first = text.first else { return nil }
        let negative = first == UInt8(ascii: "-")
        var index = first == UInt8(ascii: "-") || first == UInt8(ascii: "+") ? 1 : 0
        guard index < text.count else { return nil }
        var value: Int64 = 0
        while index < text.count {
            let digit = text[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (shifted, overflow) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = negative ? shifted.subtractingReportingOverflow(Int64(digit))
                                             : shifted.addingReportingOverflow(Int64(digit))
            guard !overflow, !overflow2 else { return nil }
            value = next
            index += 1
        }
        return value
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

    /// Each byte's value as a hex digit; 255 for a byte that is not one.
    private static let hexDigits: [UInt8] = (0...255).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt8(byte) - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt8(byte) - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt8(byte) - UInt8(ascii: "A") + 10
        default: return 255
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
