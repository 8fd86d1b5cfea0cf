import RegistryCore
import Foundation
import Glibc
import LMDB
import TokenSealing

/// Token key rotation on LMDB (`TokenKeyRotation` drives it). One server
/// serves a data directory; it records in `meta` the keys it holds
/// (`ServerKeys`), checked by a watcher once a second, so a rotation sees
/// when it has loaded the new key. Every write reads the announced key in
/// its own transaction (`writing`), and LMDB runs write transactions one at
/// a time across processes: once the announcement commits, no process
/// seals under an older key.
extension LMDBRegistryStore {
    /// An `flock` on `rotation.lock` in the environment's directory, which
    /// holds the rotation's pid: the kernel drops it when the process ends.
    public func lockKeyRotation() throws -> any KeyRotationLock {
        try FileRotationLock(path: configuration.directory + "/rotation.lock")
    }

    /// Checks `ring` against the registry (the same index key; every sealing
    /// key with a recorded check value opens it) and seals under its current
    /// key from now on.
    public func useSealingKeys(_ ring: TokenKeyRing) async throws {
        guard ring.indexKey == vault.ring.indexKey else { throw RegistryOpenError.wrongTokenKeys(detail: "another index key") }
        try keyFileChecks(ring)
        sealingKeys.install(ring)
    }

    /// Records the current sealing key's check value and announces it in
    /// `meta`: every write of every process reads the announcement in its
    /// transaction and, when its key is older, reloads the key file first
    /// (or refuses to seal).
    public func announceSealingKey() async throws {
        try await writing { writer in
            let ring = writer.vault.ring
            let check = Schema.MetaKey.sealingKeyCheck + [ring.currentKeyID]
            if try writer.txn.get(check, in: writer.schema.meta) == nil {
                try writer.txn.put(writer.vault.keyCheck(), for: check, in: writer.schema.meta)
            }
            try writer.txn.put([ring.currentKeyID], for: Schema.MetaKey.sealingKeyID, in: writer.schema.meta)
        }
    }

    /// The server serving this registry, if one runs (its record in `meta`
    /// names a process that is alive on this host).
    public func sealingKeyHolders() async throws -> [SealingKeyHolder] {
        let record = try reading { read in try read.txn.get(Schema.MetaKey.server, in: schema.meta) }
        guard let record, let server = try? ServerKeys(decoding: record), server.process.isRunning else { return [] }
        return [SealingKeyHolder(name: server.process.description, currentKeyID: server.currentKeyID, keyIDs: server.keyIDs)]
    }

    /// How many stored tokens each sealing key id seals.
    public func sealingKeyUsage() throws -> [UInt8: Int] {
        try reading { read in try Self.keysInUse(read.txn, schema, read.vault) }
    }

    /// Drops the check values of retired keys: the registry no longer uses
    /// them, so the open-time check no longer asks for them.
    public func forgetSealingKeys(_ ids: [UInt8]) async throws {
        try await writing { writer in
            for id in ids { _ = try writer.txn.delete(Schema.MetaKey.sealingKeyCheck + [id], in: writer.schema.meta) }
        }
    }

    /// Re-seals every token not sealed under the current key, in bounded
    /// write commands (at most `batchSize` values each), so a running
    /// server's writes interleave. Each value is re-read and re-written in
    /// its own command's transaction. Returns how many were re-sealed.
    public func resealTokens(batchSize: Int = 500, progress: ((_ visited: Int) -> Void)? = nil) async throws -> Int {
        var resealed = 0, visited = 0
        for kind in TokenKind.allCases {
            try await ResumableSteps.run { from in
                let step = try await writing { writer -> (resealed: Int, visited: Int, resume: [UInt8]?) in
                    let current = writer.vault.ring.currentKeyID
                    let db = writer.schema.database(kind)
                    var entries: [([UInt8], [UInt8])] = []
                    var resume: [UInt8]?
                    try writer.txn.scan(db, from: from) { key, value in
                        if entries.count == max(1, batchSize) {
                            resume = key
                            return false
                        }
                        entries.append((key, value))
                        return true
                    }
                    var count = 0
                    for (key, value) in entries where try TokenValue.sealingKeyID(of: value, writer.vault) != current {
                        let slot = TokenSlot(kind, key: key)
                        let token = try TokenValue(decoding: value, in: slot, writer.vault)
                        try writer.txn.put(token.encoded(in: slot, writer.vault), for: key, in: db)
                        count += 1
                    }
                    return (count, entries.count, resume)
                }
                resealed += step.resealed
                visited += step.visited
                progress?(visited)
                return step.resume
            }
        }
        return resealed
    }

    /// The serving process's watcher tick: when the registry announced a
    /// newer key, or this process's record in `meta` is not what it holds,
    /// a write command reloads the key file (as every write does) and
    /// records what it now seals under. A process that could not load the
    /// announced key keeps its old record, which a rotation waits on.
    func recordServerKeys() {
        let current = sealingKeys.current.ring
        let stale = try? reading { read -> Bool in
            let announced = try read.txn.get(Schema.MetaKey.sealingKeyID, in: schema.meta)?.first
            let record = try read.txn.get(Schema.MetaKey.server, in: schema.meta)
            return announced.map { $0 > current.currentKeyID } ?? false
                || record != ServerKeys(process: .current, ring: current).encoded()
        }
        guard stale != false else { return }
        _ = Blocking.result { [self] in
            try await writing { writer in
                guard writer.vault.sealingRefusal == nil else { return }
                try writer.txn.put(ServerKeys(process: .current, ring: writer.vault.ring).encoded(),
                                   for: Schema.MetaKey.server, in: writer.schema.meta)
            }
        }
    }

    /// Removes this process's record at a clean stop (a killed server's
    /// record names a process no longer running, which rotations ignore).
    func forgetServerKeys() {
        _ = Blocking.result { [self] in
            try await writing { writer in
                guard let record = try writer.txn.get(Schema.MetaKey.server, in: writer.schema.meta),
                      (try? ServerKeys(decoding: record))?.process == .current else { return }
                _ = try writer.txn.delete(Schema.MetaKey.server, in: writer.schema.meta)
            }
        }
    }
}

/// What a serving process records in `meta` (`server`): who it is and which
/// sealing keys it holds.
struct ServerKeys: Hashable {
    var process: ProcessIdentity
    var currentKeyID: UInt8
    var keyIDs: [UInt8]

    init(process: ProcessIdentity, ring: TokenKeyRing) {
        self.process = process
        currentKeyID = ring.currentKeyID
        keyIDs = ring.sealingKeys.map(\.id)
    }

    func encoded() -> [UInt8] {
        var w = ByteWriter(version: 1)
        w.string(process.host)
        w.varint(UInt64(UInt32(bitPattern: process.pid)))
        w.varint(process.startTime)
        w.byte(currentKeyID)
        w.blob(keyIDs)
        return w.bytes
    }

    init(decoding bytes: [UInt8]) throws(StoredValueError) {
        var r = try ByteReader(bytes, what: "server record", versions: 1...1)
        let host = try r.string()
        let pid = Int32(bitPattern: UInt32(truncatingIfNeeded: try r.varint()))
        process = ProcessIdentity(host: host, pid: pid, startTime: try r.varint())
        currentKeyID = try r.byte()
        keyIDs = Array(try r.blob())
        try r.finish()
    }
}

/// `flock` on a file holding the holder's pid; released by `release()` or
/// when the process ends.
final class FileRotationLock: KeyRotationLock {
    private let fd: Int32

    init(path: String) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw RegistryError.unavailable(reason: "cannot open '\(path)': \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            var bytes = [UInt8](repeating: 0, count: 32)
            let n = pread(fd, &bytes, bytes.count, 0)
            close(fd)
            let holder = n > 0 ? String(decoding: bytes[0..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : ""
            throw KeyRotationError.inProgress(holder: holder.isEmpty ? "it holds \(path)" : "pid \(holder)")
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, pid, pid.count, 0)
        self.fd = fd
    }

    func release() { flock(fd, LOCK_UN) }

    deinit { close(fd) }
}
