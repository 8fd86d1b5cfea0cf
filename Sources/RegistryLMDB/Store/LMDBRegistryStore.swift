import RegistryCore
import Foundation
import Lifecycle
import LMDB
import Synchronization
import TokenSealing

/// The registry on one LMDB environment: every rule of docs/api.md, reads in
/// short read transactions on the caller's thread, writes through one
/// group-commit writer thread, durable (fsync) before any write returns.
///
/// Limits: one writer per environment (LMDB's, across processes too);
/// identifiers up to 128 bytes (keys stay under LMDB's 511); a user's device
/// list is read whole (it is capped by `maxDevicesPerUser`).
///
/// Opening the store starts its writer, so a store works on its own (the
/// operator commands, tests). As a `Service` it belongs first in a
/// `ServiceGroup`, so that its stop (`shutdown()`: the final commit, then
/// closing the environment) comes after everything that writes has stopped.
public final class LMDBRegistryStore: RuleStore, RegistryReads, Service {
    public struct Configuration: Sendable {
        /// The LMDB environment directory (created when missing).
        public var directory: String
        /// The keys tokens are sealed and indexed with (`DIR/secrets/token-keys`).
        /// The index key is checked against the registry at open.
        public var tokenKeys: TokenKeyRing
        /// Reads the key file again (`SealingKeys`): how a running server
        /// learns the key a rotation in another process added.
        public var reloadTokenKeys: (@Sendable () throws -> TokenKeyRing)?
        /// The rules' limits: caps, TTLs, declared apps.
        public var limits = RegistryLimits()
        /// Expiry entries handled per sweep step. A step shares its group
        /// commit with the writes queued beside it, and a deleted device
        /// dirties pages all over the file (its token-owner entries are keyed
        /// by token hash), so the commit grows with the step: 1,000 entries
        /// held writes up for 150 ms, 2 ms' worth (about 46 devices) for 24 ms.
        public var sweepBatchSize = 16
        /// A sweep step also stops once it has deleted for this long (after
        /// at least one entry), whatever `sweepBatchSize` allows.
        public var sweepStepBudget: Duration = .milliseconds(2)
        public var initialMapSize = 64 << 20
        public var maxMapSize = 1 << 40
        /// Commands per group commit; 1 means one commit per command (for the benchmark).
        public var maxBatchSize = 1_000
        public var clock: any WallClock = SystemClock()
        /// Called on the writer thread after each batch (metrics).
        public var onCommit: (@Sendable (CommitBatchReport) -> Void)?
        /// Called after each bounded step of a sweep or dry run (metrics: how
        /// long a sweep holds the writer at a time).
        public var onSweepBatch: (@Sendable (SweepBatchReport) -> Void)?

        public init(directory: String, tokenKeys: TokenKeyRing) {
            self.directory = directory
            self.tokenKeys = tokenKeys
        }
    }

    let configuration: Configuration
    let environment: Environment
    let schema: Schema
    let deliverySchema: DeliverySchema
    let sealingKeys: SealingKeys
    var vault: TokenVault { sealingKeys.current }
    let apps: AppCatalog
    let writer: GroupCommitWriter
    /// Signs fan-out cursors; generated at first open, kept in `meta`.
    let cursorSecret: [UInt8]
    /// Started by `start()` (a serving process): records its keys in `meta`, and looks for a new one once a second.
    let keyWatcher = PeriodicThread(name: "registry-key-watcher", interval: .seconds(1))

    public init(configuration: Configuration) throws {
        self.configuration = configuration
        sealingKeys = SealingKeys(configuration.tokenKeys, reload: configuration.reloadTokenKeys)
        let vault = sealingKeys.current
        var environment = try Self.openEnvironment(configuration)
        do {
            var schema = try Schema(environment)
            try SchemaMigration(environment: environment, schema: schema, vault: vault,
                                apps: AppCatalog(apps: schema.apps)).run()
            if try environment.read({ txn in try txn.get(Schema.MetaKey.compactionPending, in: schema.meta) }) != nil {
                try Self.compactInPlace(&environment, configuration)
                schema = try Schema(environment)
                try environment.write { txn in _ = try txn.delete(Schema.MetaKey.compactionPending, in: schema.meta) }
            }
            self.schema = schema
            deliverySchema = try DeliverySchema(environment)
            apps = AppCatalog(apps: schema.apps, declared: configuration.limits.apps)
            cursorSecret = try environment.write { txn in try Self.checkMeta(txn, schema, vault) }
        } catch {
            environment.close()
            throw error
        }
        self.environment = environment
        writer = GroupCommitWriter(environment: environment, maxBatchSize: configuration.maxBatchSize,
                                   onCommit: configuration.onCommit)
        writer.start()
    }

    private static func openEnvironment(_ configuration: Configuration) throws -> Environment {
        try Environment(Environment.Configuration(
            path: configuration.directory, mapSize: configuration.initialMapSize,
            maxMapSize: configuration.maxMapSize, maxDatabases: 32))
    }

    /// After a migration from plaintext tokens (schema 2), the pages that
    /// held them are free but still in `data.mdb` until LMDB reuses them.
    /// A compacted copy holds live pages only; it replaces the file (a
    /// rename, so a crash leaves the one or the other, both migrated), and
    /// the environment is opened again on it. `meta`'s `compactionPending`
    /// (written with the migration's version) is cleared only after that, so
    /// a start killed or out of disk during the copy compacts at the next. Nothing else may have the
    /// environment open meanwhile: the first start after an upgrade
    /// migrates, before anything serves.
    private static func compactInPlace(_ environment: inout Environment, _ configuration: Configuration) throws {
        let directory = configuration.directory
        let scratch = directory + "/.compacting"
        try? FileManager.default.removeItem(atPath: scratch)
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        try environment.copy(toDirectory: scratch, compact: true)
        let copy = scratch + "/data.mdb"
        let fd = open(copy, O_RDONLY)
        guard fd >= 0, fsync(fd) == 0 else {
            if fd >= 0 { close(fd) }
            throw BackupError.permissions(path: copy, errno: errno)
        }
        close(fd)
        guard chmod(copy, 0o600) == 0 else { throw BackupError.permissions(path: copy, errno: errno) }
        environment.close()
        guard rename(copy, directory + "/data.mdb") == 0 else { throw BackupError.permissions(path: copy, errno: errno) }
        try? FileManager.default.removeItem(atPath: scratch)
        environment = try openEnvironment(configuration)
    }

    /// Checks the token keys against the registry (recording the index key's
    /// check value on a new one) and returns the cursor secret, generated on
    /// a new environment.
    private static func checkMeta(_ txn: WriteTransaction, _ schema: Schema, _ vault: TokenVault) throws -> [UInt8] {
        if let check = try txn.get(Schema.MetaKey.indexKeyCheck, in: schema.meta) {
            guard check == vault.indexKeyCheck else { throw RegistryOpenError.wrongTokenKeys(detail: "another index key") }
        } else {
            try txn.put(vault.indexKeyCheck, for: Schema.MetaKey.indexKeyCheck, in: schema.meta)
        }
        try checkSealingKeys(txn, schema, vault)
        if let secret = try txn.get(Schema.MetaKey.cursorSecret, in: schema.meta) { return secret }
        var generator = SystemRandomNumberGenerator()
        let secret = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        try txn.put(secret, for: Schema.MetaKey.cursorSecret, in: schema.meta)
        return secret
    }

    /// Stops taking writes, lets the writer commit what it holds, closes the
    /// environment. A serving store first stops its key watcher and removes
    /// its record from `meta`. Idempotent.
    public func shutdown() {
        if keyWatcher.stop() { forgetServerKeys() }
        writer.stop()
        environment.close()
    }

    public var name: String { "registry-store" }

    /// Makes this store the registry's server (`serve`; the writer already
    /// runs from `init`): it records the sealing keys it holds in `meta`,
    /// and a watcher looks once a second for a key a rotation announced.
    public func start() {
        writer.start()
        keyWatcher.start(runningFirst: true) { [weak self] in self?.recordServerKeys() }
    }

    /// `shutdown()`.
    public func stop() { shutdown() }

    /// A store dropped without `shutdown()` still ends its writer thread and
    /// closes the environment, so nothing is left running.
    deinit { shutdown() }

    /// A consistent hot copy of the environment into `directory`, which is
    /// created (or narrowed) to mode 0700 and must be empty; the copy is
    /// mode 0600, whatever the umask: it holds every token.
    public func backup(toDirectory directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        guard chmod(directory, 0o700) == 0 else { throw BackupError.permissions(path: directory, errno: errno) }
        try environment.copy(toDirectory: directory, compact: true)
        let file = directory + "/data.mdb"
        guard chmod(file, 0o600) == 0 else { throw BackupError.permissions(path: file, errno: errno) }
    }

    /// The stored encoding this build writes (`registryd backup` records it in its manifest).
    public static var schemaVersion: UInt64 { Schema.version }

    /// `false` once a commit failed or the map could not grow.
    public var isHealthy: Bool { writer.isHealthy && environment.isUsable }

    public func checkHealth() throws {
        guard isHealthy else { throw RegistryError.unavailable(reason: "storage is unusable") }
    }

    /// An LMDB read waits on nothing but memory: it runs on the caller's thread.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any RegistryReads) throws -> T) async throws -> T {
        try body(self)
    }

    public var inlineReads: (any RegistryReads & Sendable)? { self }

    var now: Timestamp { configuration.clock.now() }

    /// A read on the caller's thread. Once the environment is unusable (a
    /// failed map resize) it throws `.unavailable`, which answers 503.
    func reading<T>(_ body: (RecordReader) throws -> T) throws -> T {
        do {
            do {
                return try environment.read { txn in
                    try body(RecordReader(txn: txn, schema: schema, vault: vault, apps: apps))
                }
            } catch let unknown as UnknownSealingKey where sealingKeys.reload(toKnow: unknown.keyID, checks: keyFileChecks) {
                return try environment.read { txn in
                    try body(RecordReader(txn: txn, schema: schema, vault: vault, apps: apps))
                }
            }
        } catch let error as LMDBError where !environment.isUsable {
            throw RegistryError.unavailable(reason: "the storage map could not grow: \(error)")
        } catch let unknown as UnknownSealingKey {
            throw unknown.unavailable
        }
    }

    package var limits: RegistryLimits { configuration.limits }

    /// Runs `body` as one command of the next group commit (every write
    /// runs on the one writer thread, so `user` orders nothing here, and a
    /// read is no round trip, so `record` is not read ahead).
    package func writing<T: Sendable>(user: String? = nil, reading record: RecordID? = nil,
                                      _ body: @escaping @Sendable (RecordWriter) throws -> T) async throws -> T {
        let schema = self.schema, keys = self.sealingKeys, apps = self.apps
        let clock = configuration.clock
        do {
            return try await writer.submit { txn in
                // The key a rotation announced, read in this very transaction: once its commit is
                // visible, no write seals under an older key (it reloads the key file, or refuses to seal).
                let announced = try txn.get(Schema.MetaKey.sealingKeyID, in: schema.meta)?.first
                let vault = keys.forWriting(announced: announced) { ring in try Self.verifySealingKeys(ring, txn, schema) }
                return try body(RecordWriter(txn: txn, schema: schema, vault: vault, apps: apps, now: clock.now()))
            }
        } catch let unknown as UnknownSealingKey {
            throw unknown.unavailable
        }
    }
}
