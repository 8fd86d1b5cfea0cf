/// What `registryd`'s operator commands ask of a store beyond the contract
/// (export, import, check, token key rotation), on every backend: `export`
/// from one backend piped into `import` on another is how a registry moves
/// between them.
public protocol RegistryMaintenance: RegistryStore {
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

    /// Records the current sealing key as the one every node and process
    /// seals under from now on (a rotation's first step).
    func announceSealingKey() async throws

    /// How many stored tokens each sealing key id seals.
    func sealingKeyUsage() async throws -> [UInt8: Int]

    /// Re-seals every token not sealed under the current key, in bounded
    /// transactions; returns how many were re-sealed.
    func resealTokens(batchSize: Int, progress: ((_ visited: Int) -> Void)?) async throws -> Int

    /// Stops the store (final commits, connections closed). Idempotent.
    func shutdown()
}

extension LMDBRegistryStore: RegistryMaintenance {}
