import RegistryCore
import LMDB

/// The token-owner entries a sweep left behind, and the pass that deletes
/// them in key order.
///
/// Owner entries are keyed by an HMAC of the token, so deleting a device's
/// entries as the sweep deletes the device dirtied one owner-index page per
/// token: most of a sweep step's commit (about 100 of 141 pages for 16
/// devices, `registry-bench sweep-pages`). Instead the sweep leaves them
/// (`RecordWriter.deferOwnerDeletes`) and appends their keys to
/// `v3.ownerCleanup`, whose keys are a counter, so a step's appends share a
/// page. Such an entry names a holder that no longer holds its token, and
/// every reader already treats that as no owner (`RecordReader.owner`
/// checks the holder); a registration of the token overwrites it.
///
/// Once the log holds `density` keys per leaf page of the owner index, the
/// sweep ends with this pass: it reads up to `chunkLimit` logged keys (the
/// oldest), sorts them, and deletes in key order, each entry only if its
/// holder still does not hold its token; then it drops those log entries,
/// oldest first. Sorted, a step's deletions share pages (at two keys per
/// leaf page, about 2.3 per page dirtied; after a sweep that removed half
/// of the store, twenty), so a step takes as many keys as should fall on
/// about `pagesPerStep` leaf pages (`batchSize`). A crash between the two
/// leaves the log entries, and the next pass finds their owner entries gone
/// or held: nothing to do.
///
/// Bounds: at most `max(minimumPending, density × leaf pages)` logged
/// entries wait between passes (below 5% of the owner index at 50 entries a
/// page), each an owner entry and a 41-byte log entry.
struct OwnerCleanup: Sendable {
    let schema: Schema
    var pagesPerStep = 32
    var stepBudget: Duration = .milliseconds(2)
    var density = 2
    var minimumPending = 256
    var chunkLimit = 1 << 18

    /// The log key after the last one; in an empty log, `now` in
    /// milliseconds × 1,024, so that keys never start over below a chunk's
    /// end that another process's pass (a second sweep) is about to drop.
    static func nextLogKey(_ txn: ReadTransaction, _ schema: Schema, now: Timestamp) throws -> [UInt8] {
        var last: UInt64?
        try txn.scan(schema.ownerCleanup, reverse: true) { key, _ in
            last = BigEndian.value(key)
            return false
        }
        return BigEndian.bytes(last.map { $0 + 1 } ?? UInt64(max(0, now.milliseconds)) << 10, count: 8)
    }

    /// Whether enough keys wait for a pass to share pages.
    func isDue(_ txn: ReadTransaction) throws -> Bool {
        let pending = try txn.count(in: schema.ownerCleanup)
        let leaves = try txn.leafPages(in: schema.tokenOwners)
        return pending > 0 && pending >= max(minimumPending, density * leaves)
    }

    /// Keys a step of `chunk` takes: `pagesPerStep` leaf pages' worth at
    /// the chunk's keys per leaf page (at least one page a key).
    func batchSize(_ chunk: Int, _ txn: ReadTransaction) throws -> Int {
        let leaves = max(1, try txn.leafPages(in: schema.tokenOwners))
        return pagesPerStep * max(1, chunk / leaves)
    }

    /// The oldest `chunkLimit` logged owner keys, sorted and without
    /// repeats, and the log key after the last one read (where the drop of
    /// the chunk stops).
    func chunk(_ txn: ReadTransaction) throws -> (keys: [[UInt8]], end: [UInt8]) {
        var keys: [[UInt8]] = []
        var end: [UInt8] = BigEndian.bytes(0, count: 8)
        try txn.scan(schema.ownerCleanup) { key, value in
            if keys.count == chunkLimit { return false }
            keys.append(value)
            end = BigEndian.bytes(BigEndian.value(key) + 1, count: 8)
            return true
        }
        keys.sort { $0.lexicographicallyPrecedes($1) }
        var unique: [[UInt8]] = []
        unique.reserveCapacity(keys.count)
        for key in keys where unique.last != key { unique.append(key) }
        return (unique, end)
    }

    /// Deletes, in order, the owner entries among `keys[from...]` whose
    /// holder does not hold their token, until `batchSize` keys or
    /// `stepBudget` are spent (one key at least). Returns the index where
    /// the next step starts (`nil` when done).
    func clean(_ keys: [[UInt8]], from start: Int, batchSize: Int, _ writer: RecordWriter) throws -> Int? {
        let deadline = ContinuousClock.now + stepBudget
        let end = min(keys.count, start + batchSize)
        for index in start..<end {
            if index > start, ContinuousClock.now >= deadline { return index }
            let key = keys[index]
            if try isStale(key, writer.read) { try writer.txn.delete(key, in: schema.tokenOwners) }
        }
        return end < keys.count ? end : nil
    }

    /// Whether the entry under `key` exists and names a holder that does
    /// not hold its token (an unreadable entry is left to `check`).
    func isStale(_ key: [UInt8], _ read: RecordReader) throws -> Bool {
        guard key.count == 33, let kind = TokenKind(rawValue: key[32]),
              let bytes = try read.txn.get(key, in: schema.tokenOwners),
              let holder = try? TokenHolder(decoding: bytes) else { return false }
        let holderKey = read.tokenKey(kind, holder)
        guard let sealed = try read.txn.get(holderKey, in: schema.database(kind)) else { return true }
        guard let held = try? TokenValue(decoding: sealed, in: TokenSlot(kind, key: holderKey), read.vault) else { return false }
        return read.vault.ownerKey(held.token, kind) != key
    }

    /// Drops up to `pagesPerStep` pages' worth of log entries before `end`
    /// (about 80 a page), oldest first; true when some may be left.
    func dropLog(before end: [UInt8], _ txn: WriteTransaction) throws -> Bool {
        var keys: [[UInt8]] = []
        let limit = pagesPerStep * 80
        try txn.scan(schema.ownerCleanup) { key, _ in
            guard key.lexicographicallyPrecedes(end), keys.count < limit else { return false }
            keys.append(key)
            return true
        }
        for key in keys { try txn.delete(key, in: schema.ownerCleanup) }
        return keys.count == limit
    }

    /// The logged owner keys, for `check` and the repair: an entry among
    /// them that names a holder not holding its token is waiting for the
    /// pass, not damage.
    static func pending(_ txn: ReadTransaction, _ schema: Schema) throws -> Set<[UInt8]> {
        var keys = Set<[UInt8]>()
        try txn.scan(schema.ownerCleanup) { _, value in
            keys.insert(value)
            return true
        }
        return keys
    }
}
