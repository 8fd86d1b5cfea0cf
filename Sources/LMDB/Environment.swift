import CLMDB
import Foundation
import Synchronization

/// One LMDB environment (a directory holding `data.mdb` and `lock.mdb`).
///
/// Thread-safe. Opened with `MDB_NOTLS`, so a read transaction is not tied
/// to a thread's slot; every transaction here still begins and ends inside
/// one call on one thread. Sync stays on: no `MDB_NOSYNC`, `MDB_NOMETASYNC`,
/// `MDB_MAPASYNC` or `MDB_WRITEMAP`, so a returned `write` is on disk.
///
/// Limits: one write transaction at a time (LMDB's own lock, across
/// processes too); keys 1...511 bytes; keep read transactions short, since a
/// long one pins pages and the file grows.
public final class Environment: @unchecked Sendable {
    public struct Configuration: Sendable {
        /// A directory, created (mode 0700) when missing.
        public var path: String
        /// The initial map size in bytes; the map grows by doubling when full.
        public var mapSize: Int
        /// Growth stops here and `.mapFull` surfaces.
        public var maxMapSize: Int
        public var maxDatabases: Int
        public var maxReaders: Int

        public init(path: String, mapSize: Int = 64 << 20, maxMapSize: Int = 1 << 40,
                    maxDatabases: Int = 16, maxReaders: Int = 126) {
            self.path = path
            self.mapSize = mapSize
            self.maxMapSize = maxMapSize
            self.maxDatabases = maxDatabases
            self.maxReaders = maxReaders
        }
    }

    public let configuration: Configuration
    let handle: OpaquePointer
    /// Held shared by every transaction, exclusive to resize the map or close.
    private let gate = ReadWriteLock()
    private let state: Mutex<(mapSize: Int, closed: Bool, unusable: Bool, databases: [String: MDB_dbi])>

    public init(_ configuration: Configuration) throws {
        self.configuration = configuration
        try FileManager.default.createDirectory(atPath: configuration.path, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        var env: OpaquePointer?
        try LMDBError.check(mdb_env_create(&env))
        guard let env else { throw LMDBError.invalid }
        do {
            try LMDBError.check(mdb_env_set_maxdbs(env, MDB_dbi(configuration.maxDatabases)))
            try LMDBError.check(mdb_env_set_maxreaders(env, UInt32(configuration.maxReaders)))
            try LMDBError.check(mdb_env_set_mapsize(env, configuration.mapSize))
            try LMDBError.check(mdb_env_open(env, configuration.path, UInt32(MDB_NOTLS), 0o600))
        } catch {
            mdb_env_close(env)
            throw error
        }
        handle = env
        // Reader slots left by crashed processes pin old pages until cleared.
        var dead: Int32 = 0
        mdb_reader_check(env, &dead)
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        state = Mutex((mapSize: info.me_mapsize, closed: false, unusable: false, databases: [:]))
    }

    deinit { close() }

    /// Opens (creating when `create`) a named database in its own write
    /// transaction. Call at start-up, before concurrent use.
    public func openDatabase(_ name: String, create: Bool = true) throws -> Database {
        if let dbi = state.withLock({ $0.databases[name] }) { return Database(name: name, dbi: dbi) }
        let dbi: MDB_dbi = try write { txn in
            var dbi: MDB_dbi = 0
            try LMDBError.check(mdb_dbi_open(txn.handle, name, create ? UInt32(MDB_CREATE) : 0, &dbi))
            return dbi
        }
        state.withLock { $0.databases[name] = dbi }
        return Database(name: name, dbi: dbi)
    }

    /// A read transaction on the calling thread, aborted when `body` returns or throws.
    public func read<T>(_ body: (ReadTransaction) throws -> T) throws -> T {
        while true {
            let outcome: Result<T, any Error>? = try gate.shared {
                try checkOpen()
                var txn: OpaquePointer?
                let rc = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn)
                if rc == MDB_MAP_RESIZED { return nil }
                try LMDBError.check(rc)
                guard let txn else { throw LMDBError.badTransaction }
                let transaction = ReadTransaction(txn)
                defer {
                    transaction.invalidate()
                    mdb_txn_abort(txn)
                }
                return Result { try body(transaction) }
            }
            if let outcome { return try outcome.get() }
            try adoptResizedMap()
        }
    }

    /// A write transaction: commits when `body` returns, aborts when it
    /// throws. On `MDB_MAP_FULL` it aborts, grows the map while no
    /// transaction is active in this process, and runs `body` again from the
    /// start, so `body` must be safe to re-run. That holds even when `body`
    /// caught or wrapped the `.mapFull` (say, inside `nested`): what it did
    /// next was based on a failed write. On `MDB_MAP_RESIZED` (another process
    /// grew the map) it adopts the new size and retries. Any other failed
    /// commit is thrown and never retried (after a failed fsync nothing is
    /// trusted). Growth stops at `maxMapSize`, where `.mapFull` surfaces.
    public func write<T>(_ body: (WriteTransaction) throws -> T) throws -> T {
        while true {
            let step: WriteStep<T> = try gate.shared {
                try checkOpen()
                var txn: OpaquePointer?
                let rc = mdb_txn_begin(handle, nil, 0, &txn)
                if rc == MDB_MAP_RESIZED { return .adopt }
                try LMDBError.check(rc)
                guard let txn else { throw LMDBError.badTransaction }
                let record = WriteRecord()
                let transaction = WriteTransaction(txn, record: record)
                let value: T
                do {
                    value = try body(transaction)
                } catch {
                    transaction.invalidate()
                    mdb_txn_abort(txn)
                    if record.sawMapFull { return .grow }
                    throw error
                }
                transaction.invalidate()
                // A map-full the body caught still spoiled what it did: abort and run again.
                if record.sawMapFull {
                    mdb_txn_abort(txn)
                    return .grow
                }
                // mdb_txn_commit frees the handle even when it fails: ours is cleared first.
                let commit = mdb_txn_commit(txn)
                if commit == MDB_MAP_FULL { return .grow }
                try LMDBError.check(commit)
                return .done(value)
            }
            switch step {
            case .done(let value): return value
            case .grow: try growMap()
            case .adopt: try adoptResizedMap()
            }
        }
    }

    private enum WriteStep<T> { case done(T), grow, adopt }

    /// Doubles the map (capped at `maxMapSize`); `.mapFull` when already there.
    private func growMap() throws {
        try gate.exclusive {
            try checkOpen()
            let current = state.withLock { $0.mapSize }
            guard current < configuration.maxMapSize else { throw LMDBError.mapFull }
            try resize(to: min(max(current * 2, current + (1 << 20)), configuration.maxMapSize))
        }
    }

    /// Another process grew the map: take its size (`mdb_env_set_mapsize(0)`).
    private func adoptResizedMap() throws {
        try gate.exclusive {
            try checkOpen()
            try resize(to: 0)
        }
    }

    /// `mdb_env_set_mapsize` unmaps the old map before mapping the new one;
    /// when the new `mmap` fails (ENOMEM under RLIMIT_AS, say) LMDB's meta
    /// pointers still point into the unmapped region and the next
    /// transaction would crash the process. So a failed resize makes the
    /// environment unusable for good: every later call throws `.panic`
    /// without touching LMDB, and the owner exits for its supervisor.
    /// Called with the gate held exclusively.
    private func resize(to size: Int) throws {
        let rc = mdb_env_set_mapsize(handle, size)
        guard rc == 0 else {
            state.withLock { $0.unusable = true }
            throw LMDBError(code: rc)
        }
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        state.withLock { $0.mapSize = info.me_mapsize }
    }

    /// `false` once a map resize failed: nothing may touch LMDB again.
    public var isUsable: Bool { state.withLock { !$0.unusable } }

    private func checkOpen() throws {
        let (closed, unusable) = state.withLock { ($0.closed, $0.unusable) }
        if unusable { throw LMDBError.panic }
        if closed { throw LMDBError.invalid }
    }

    public var info: EnvironmentInfo {
        get throws {
            try gate.shared {
                try checkOpen()
                var info = MDB_envinfo()
                var stat = MDB_stat()
                try LMDBError.check(mdb_env_info(handle, &info))
                try LMDBError.check(mdb_env_stat(handle, &stat))
                return EnvironmentInfo(mapSizeBytes: info.me_mapsize,
                                       usedBytes: (info.me_last_pgno + 1) * Int(stat.ms_psize),
                                       pageSize: Int(stat.ms_psize), maxReaders: Int(info.me_maxreaders),
                                       readersInUse: Int(info.me_numreaders))
            }
        }
    }

    /// `mdb_reader_check`: frees reader slots of dead processes; returns how many.
    @discardableResult
    public func checkStaleReaders() throws -> Int {
        try gate.shared {
            try checkOpen()
            var dead: Int32 = 0
            try LMDBError.check(mdb_reader_check(handle, &dead))
            return Int(dead)
        }
    }

    /// A consistent hot copy into an existing empty directory (`mdb_env_copy2`).
    public func copy(toDirectory path: String, compact: Bool) throws {
        try gate.shared {
            try checkOpen()
            try LMDBError.check(mdb_env_copy2(handle, path, compact ? UInt32(MDB_CP_COMPACT) : 0))
        }
    }

    /// Idempotent; waits for transactions in flight, after it every call throws.
    public func close() {
        gate.exclusive {
            let wasOpen = state.withLock { s -> Bool in
                defer { s.closed = true }
                return !s.closed
            }
            // After a failed resize LMDB's own close would read the dangling
            // meta pointers; the process is about to exit, so leak it instead.
            if wasOpen && isUsable { mdb_env_close(handle) }
        }
    }
}
