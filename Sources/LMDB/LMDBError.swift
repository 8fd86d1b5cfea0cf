import CLMDB
import Glibc

/// Every failure an LMDB call can report, one case per `MDB_*` code; errno
/// values (ENOSPC, EIO, EACCES…) are `.system`. A missing key is not an
/// error here: reads return `nil`.
public enum LMDBError: Error, Hashable, Sendable, CustomStringConvertible {
    case keyExists, notFound, pageNotFound, corrupted, panic, versionMismatch, invalid, mapFull, databasesFull,
         readersFull, tlsFull, transactionFull, cursorFull, pageFull, mapResized, incompatible, badReaderSlot,
         badTransaction, badValueSize, badDatabase
    case system(errno: Int32)

    init(code: Int32) {
        switch code {
        case MDB_KEYEXIST: self = .keyExists
        case MDB_NOTFOUND: self = .notFound
        case MDB_PAGE_NOTFOUND: self = .pageNotFound
        case MDB_CORRUPTED: self = .corrupted
        case MDB_PANIC: self = .panic
        case MDB_VERSION_MISMATCH: self = .versionMismatch
        case MDB_INVALID: self = .invalid
        case MDB_MAP_FULL: self = .mapFull
        case MDB_DBS_FULL: self = .databasesFull
        case MDB_READERS_FULL: self = .readersFull
        case MDB_TLS_FULL: self = .tlsFull
        case MDB_TXN_FULL: self = .transactionFull
        case MDB_CURSOR_FULL: self = .cursorFull
        case MDB_PAGE_FULL: self = .pageFull
        case MDB_MAP_RESIZED: self = .mapResized
        case MDB_INCOMPATIBLE: self = .incompatible
        case MDB_BAD_RSLOT: self = .badReaderSlot
        case MDB_BAD_TXN: self = .badTransaction
        case MDB_BAD_VALSIZE: self = .badValueSize
        case MDB_BAD_DBI: self = .badDatabase
        default: self = .system(errno: code)
        }
    }

    /// Throws unless `code` is MDB_SUCCESS: the one check every call goes through.
    static func check(_ code: Int32) throws(LMDBError) {
        if code != MDB_SUCCESS { throw LMDBError(code: code) }
    }

    /// The C return code this case stands for.
    public var code: Int32 {
        switch self {
        case .keyExists: MDB_KEYEXIST
        case .notFound: MDB_NOTFOUND
        case .pageNotFound: MDB_PAGE_NOTFOUND
        case .corrupted: MDB_CORRUPTED
        case .panic: MDB_PANIC
        case .versionMismatch: MDB_VERSION_MISMATCH
        case .invalid: MDB_INVALID
        case .mapFull: MDB_MAP_FULL
        case .databasesFull: MDB_DBS_FULL
        case .readersFull: MDB_READERS_FULL
        case .tlsFull: MDB_TLS_FULL
        case .transactionFull: MDB_TXN_FULL
        case .cursorFull: MDB_CURSOR_FULL
        case .pageFull: MDB_PAGE_FULL
        case .mapResized: MDB_MAP_RESIZED
        case .incompatible: MDB_INCOMPATIBLE
        case .badReaderSlot: MDB_BAD_RSLOT
        case .badTransaction: MDB_BAD_TXN
        case .badValueSize: MDB_BAD_VALSIZE
        case .badDatabase: MDB_BAD_DBI
        case .system(let errno): errno
        }
    }

    /// lmdb's own message (strerror for errno values).
    public var description: String { String(cString: mdb_strerror(code)) }
}
