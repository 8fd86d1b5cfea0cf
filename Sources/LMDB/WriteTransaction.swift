import CLMDB

/// A transaction that reads and writes. Only `Environment.write` makes one
/// (and `nested`, for a child).
///
/// Limits: one at a time per environment (LMDB's writer lock); keys
/// 1...511 bytes; a single transaction's dirty pages are bounded by LMDB
/// (`.transactionFull`), so batch huge imports into several writes.
public final class WriteTransaction: ReadTransaction {
    /// Shared by a top-level transaction and all its children, so a map-full
    /// anywhere reaches `Environment.write` even if `body` caught or wrapped it.
    let record: WriteRecord

    init(_ handle: OpaquePointer, record: WriteRecord) {
        self.record = record
        super.init(handle)
    }

    public func put(_ value: [UInt8], for key: [UInt8], in db: Database) throws {
        let txn = try live()
        try Self.checkKey(key)
        try key.withMDBVal { keyVal in
            try value.withMDBVal { valueVal in
                try track(mdb_put(txn, db.dbi, &keyVal, &valueVal, 0))
            }
        }
    }

    /// Deletes every entry of `db` (`mdb_drop` without deleting the
    /// database itself): what a schema migration leaves of an old database.
    public func empty(_ db: Database) throws {
        let txn = try live()
        try track(mdb_drop(txn, db.dbi, 0))
    }

    /// Returns false when the key was not there.
    @discardableResult
    public func delete(_ key: [UInt8], in db: Database) throws -> Bool {
        let txn = try live()
        try Self.checkKey(key)
        return try key.withMDBVal { keyVal in
            let rc = mdb_del(txn, db.dbi, &keyVal, nil)
            if rc == MDB_NOTFOUND { return false }
            try track(rc)
            return true
        }
    }

    /// A child transaction: its changes join this one when `body` returns
    /// and are discarded when it throws, so one command of a batch can fail
    /// alone. This transaction must not be used until `body` returns.
    ///
    /// A `.mapFull` inside the child still makes the whole top-level write
    /// grow the map and run again, even when the caller catches the error.
    public func nested<T>(_ body: (WriteTransaction) throws -> T) throws -> T {
        let parent = try live()
        var child: OpaquePointer?
        try track(mdb_txn_begin(mdb_txn_env(parent), parent, 0, &child))
        guard let child else { throw LMDBError.badTransaction }
        let transaction = WriteTransaction(child, record: record)
        let value: T
        do {
            value = try body(transaction)
        } catch {
            transaction.invalidate()
            mdb_txn_abort(child)
            throw error
        }
        // mdb_txn_commit frees the child even when it fails: clear ours first.
        transaction.invalidate()
        try track(mdb_txn_commit(child))
        return value
    }

    /// `LMDBError.check`, noting a map-full for `Environment.write`.
    private func track(_ code: Int32) throws(LMDBError) {
        if code == MDB_MAP_FULL { record.sawMapFull = true }
        try LMDBError.check(code)
    }
}

/// What happened inside one top-level write transaction, across its children.
/// Touched only by the thread running that write.
final class WriteRecord {
    var sawMapFull = false
}
