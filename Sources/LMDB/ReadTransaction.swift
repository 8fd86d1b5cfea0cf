import CLMDB

/// A transaction that reads. Valid only inside the closure that received it:
/// never store it. Every returned `[UInt8]` is a copy, because memory from
/// `mdb_get` is valid only until the transaction ends.
public class ReadTransaction {
    private(set) var handle: OpaquePointer?

    init(_ handle: OpaquePointer) { self.handle = handle }

    /// Called when the transaction ends, so a leaked reference fails cleanly.
    func invalidate() { handle = nil }

    func live() throws -> OpaquePointer {
        guard let handle else { throw LMDBError.badTransaction }
        return handle
    }

    /// The value stored under `key`, or `nil` when there is none.
    public func get(_ key: [UInt8], in db: Database) throws -> [UInt8]? {
        let txn = try live()
        try Self.checkKey(key)
        return try key.withMDBVal { keyVal in
            var value = MDB_val()
            let rc = mdb_get(txn, db.dbi, &keyVal, &value)
            if rc == MDB_NOTFOUND { return nil }
            try LMDBError.check(rc)
            return value.bytes
        }
    }

    /// How many entries the database holds (O(1): `mdb_stat`).
    public func count(in db: Database) throws -> Int {
        var stat = MDB_stat()
        try LMDBError.check(mdb_stat(try live(), db.dbi, &stat))
        return stat.ms_entries
    }

    /// How many leaf pages the database's B-tree has (O(1): `mdb_stat`):
    /// about how many pages deletions spread over its keys can dirty.
    public func leafPages(in db: Database) throws -> Int {
        var stat = MDB_stat()
        try LMDBError.check(mdb_stat(try live(), db.dbi, &stat))
        return stat.ms_leaf_pages
    }

    /// Visits entries in key order from the first key >= `from` (or the
    /// first key), only while keys start with `prefix`. With `reverse`, in
    /// descending order from the last key <= `from` (or the last key within
    /// `prefix` when `from` is nil or beyond every key with that prefix).
    /// `visit` returns false to stop. Do not write to the same
    /// database from `visit`: collect keys, then change them.
    public func scan(_ db: Database, prefix: [UInt8] = [], from: [UInt8]? = nil, reverse: Bool = false,
                     _ visit: (_ key: [UInt8], _ value: [UInt8]) throws -> Bool) throws {
        try walk(db, prefix: prefix, from: from, reverse: reverse) { key, value in try visit(key.bytes, value.bytes) }
    }

    /// `scan` forwards over the bytes in place: `key` and `value` point into
    /// LMDB's map and are valid only during that call of `visit` (copy what
    /// must outlive it). Spares two arrays per entry on the hot reads.
    public func scanInPlace(_ db: Database, prefix: [UInt8],
                            _ visit: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool) throws {
        try walk(db, prefix: prefix, from: nil, reverse: false) { key, value in
            try visit(UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size),
                      UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size))
        }
    }

    private func walk(_ db: Database, prefix: [UInt8], from: [UInt8]?, reverse: Bool,
                      _ visit: (_ key: MDB_val, _ value: MDB_val) throws -> Bool) throws {
        var opened: OpaquePointer?
        try LMDBError.check(mdb_cursor_open(try live(), db.dbi, &opened))
        defer { mdb_cursor_close(opened) }
        var cursor = Cursor(handle: opened)
        var found: Bool
        if !reverse {
            let start = from.map { $0.lexicographicallyPrecedes(prefix) ? prefix : $0 } ?? prefix
            found = try cursor.seek(start)
        } else if let from, !Self.isPast(from, prefix: prefix) {
            // The last key <= from: seek to the first key >= from, step back unless equal.
            if try cursor.seek(from) {
                found = cursor.key.bytes == from ? true : try cursor.position(MDB_PREV)
            } else {
                found = try cursor.position(MDB_LAST)
            }
        } else if let after = Self.successor(of: prefix) {
            found = try cursor.seek(after) ? try cursor.position(MDB_PREV) : try cursor.position(MDB_LAST)
        } else {
            found = try cursor.position(MDB_LAST)
        }
        while found {
            guard cursor.key.hasPrefix(prefix) else { return }
            guard try visit(cursor.key, cursor.value) else { return }
            found = try cursor.position(reverse ? MDB_PREV : MDB_NEXT)
        }
    }

    /// An open cursor and the entry it is on. A struct with mutating
    /// methods rather than closures over local variables: captured `var`s
    /// cost a dynamic exclusivity check on every access, about 80
    /// instructions each, several per entry of every scan.
    private struct Cursor {
        let handle: OpaquePointer?
        var key = MDB_val()
        var value = MDB_val()

        /// Moves by `op`; false when there is no such entry.
        mutating func position(_ op: MDB_cursor_op) throws -> Bool {
            let rc = mdb_cursor_get(handle, &key, &value, op)
            if rc == MDB_NOTFOUND { return false }
            try LMDBError.check(rc)
            return true
        }

        /// The first key >= `target`; LMDB refuses an empty key, and every key is >= the empty one.
        mutating func seek(_ target: [UInt8]) throws -> Bool {
            if target.isEmpty { return try position(MDB_FIRST) }
            return try target.withMDBVal { targetVal in
                key = targetVal
                return try position(MDB_SET_RANGE)
            }
        }
    }

    /// The smallest key greater than every key starting with `prefix`, or
    /// `nil` when there is none (empty prefix or all 0xFF).
    static func successor(of prefix: [UInt8]) -> [UInt8]? {
        var bytes = prefix
        while let last = bytes.last {
            if last < 0xFF {
                bytes[bytes.count - 1] = last + 1
                return bytes
            }
            bytes.removeLast()
        }
        return nil
    }

    /// Whether `key` sorts after every key starting with `prefix`, so a
    /// reverse scan from it starts at the last key within `prefix`.
    static func isPast(_ key: [UInt8], prefix: [UInt8]) -> Bool {
        guard let after = successor(of: prefix) else { return false }
        return !key.lexicographicallyPrecedes(after)
    }

    static func checkKey(_ key: [UInt8]) throws {
        guard !key.isEmpty, key.count <= 511 else { throw LMDBError.badValueSize }
    }
}
