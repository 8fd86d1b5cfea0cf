import TokenSealing

/// What `registryd`'s operator commands ask of a store beyond the contract
/// (export, import, check, token key rotation), on every backend: `export`
/// from one backend piped into `import` on another is how a registry moves
/// between them. Every engine also keeps the delivery queue (`DeliveryStore`),
/// which `serve`'s sender drives.
public protocol RegistryMaintenance: RegistryStore, DeliveryStore {
    /// Every record, device by device (with its tokens), then the
    /// tombstones, then every user's token history (oldest first), from one
    /// consistent snapshot, on the caller's task. Tokens are opened: export
    /// is plaintext (an operator tool).
    func export(_ visit: (ExportedRecord) throws -> Void) async throws

    /// Writes exported records as they are (replacing a record with the
    /// same ids, timestamps kept, no history of their own), in bounded
    /// transactions. Importing the same lines again changes nothing.
    /// Returns how many records were written.
    func importRecords(_ records: [ExportedRecord]) async throws -> Int

    /// Checks the store's indexes and invariants; returns the problems found
    /// (at most `limit`), empty when consistent. `progress` is given the
    /// entries visited so far, on the caller's task.
    func check(limit: Int, progress: ((_ entriesDone: Int) -> Void)?) async throws -> [String]

    // MARK: Token key rotation (`TokenKeyRotation` drives these)

    /// Takes the registry's rotation lock, or throws
    /// `KeyRotationError.inProgress` naming the holder. Blocks its thread
    /// (call it from a plain thread).
    func lockKeyRotation() throws -> any KeyRotationLock

    /// Checks `ring` against the registry (its index key; every sealing key
    /// the registry recorded opens its check value), then seals under its
    /// current key. Throws `RegistryOpenError.wrongTokenKeys` otherwise.
    func useSealingKeys(_ ring: TokenKeyRing) async throws

    /// Records the current sealing key (and its check value) as the one
    /// every node and process seals under from now on. Once this returns,
    /// no write anywhere seals under an older key: each reloads its key
    /// file first, or refuses to seal.
    func announceSealingKey() async throws

    /// The running servers (nodes) and the keys they hold.
    func sealingKeyHolders() async throws -> [SealingKeyHolder]

    /// How many stored tokens each sealing key id seals.
    func sealingKeyUsage() async throws -> [UInt8: Int]

    /// Re-seals every token not sealed under the current key, in bounded
    /// transactions; returns how many were re-sealed.
    func resealTokens(batchSize: Int, progress: ((_ visited: Int) -> Void)?) async throws -> Int

    /// Forgets keys no stored token uses any more (their check values), so
    /// that opening the registry no longer requires them.
    func forgetSealingKeys(_ ids: [UInt8]) async throws

    /// Rebuilds the engine's own indexes from the records (LMDB; in short
    /// write steps a running server's writes interleave with) and reports
    /// the fixes; `nil` for an engine whose database keeps its indexes
    /// itself (PostgreSQL). `progress` is given the entries visited so far.
    func repairIndexes(lineLimit: Int, progress: ((_ entriesDone: Int) -> Void)?) async throws -> IndexRepairSummary?

    /// A commit failed, so nothing after it is trusted: the process should
    /// exit for its supervisor (LMDB). A PostgreSQL outage is transient and
    /// never sets it.
    var hasFailedPermanently: Bool { get }

    /// Stops the store (final commits, connections closed). Idempotent.
    func shutdown()
}


/// What `RegistryMaintenance.repairIndexes` did: the first fixes, one line
/// each, how many more there were, and one line with the counts.
public struct IndexRepairSummary: Sendable, Hashable {
    public var lines: [String]
    public var linesLeftOut: Int
    public var summary: String

    public init(lines: [String], linesLeftOut: Int, summary: String) {
        self.lines = lines
        self.linesLeftOut = linesLeftOut
        self.summary = summary
    }
}
