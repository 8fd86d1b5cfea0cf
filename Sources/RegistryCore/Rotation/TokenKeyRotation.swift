import Glibc
import TokenSealing

/// A sealing key rotation (`registryd rotate-token-key`), beside running
/// servers, that cannot lose a token:
///
/// 1. The registry's rotation lock: one rotation at a time.
/// 2. The key file gains a new key, made current, written over the old one
///    with its owner and mode (`TokenKeyFile.replace`), so the servers can
///    read it. A key file that already holds more than one sealing key is a
///    rotation that stopped half-way: it is finished, with its newest key.
/// 3. The store checks the file against the registry and seals under the
///    new key; the key is announced in the registry: from then on no write
///    of any process seals under an older key (each reloads its key file,
///    or refuses to seal with a 503).
/// 4. It waits until every running server records that it holds the new
///    key (so none would fail to read the values re-sealed next).
/// 5. Every token sealed under another key is re-sealed, in bounded write
///    steps; a count that finds none left under an old key ends it.
/// 6. Only then are the old keys removed from the key file, and the
///    registry forgets them.
///
/// Stopped anywhere (a crash, a server that never loads the key), the key
/// file holds every key a stored value may use, and running it again
/// finishes. Blocks its thread: run it from a plain thread.
public struct TokenKeyRotation: Sendable {
    public struct Outcome: Sendable, Equatable {
        public let newKeyID: UInt8
        /// The rotation finished one that had stopped half-way.
        public let resumed: Bool
        public let resealed: Int
        public let retiredKeyIDs: [UInt8]
    }

    package let store: any RegistryMaintenance
    package let keyFile: String
    /// Tokens re-sealed per write transaction.
    public var batchSize = 500
    /// Re-seal passes before giving up on values still under an old key.
    public var maxPasses = 5
    /// How long to wait for every server to hold the new key.
    public var serverWait: Duration = .seconds(30)
    /// Told which servers it waits for (once per change of that list).
    public var onWaiting: (@Sendable ([SealingKeyHolder]) -> Void)?
    /// Told how many tokens the re-seal visited so far.
    public var onProgress: (@Sendable (Int) -> Void)?

    public init(store: any RegistryMaintenance, keyFile: String) {
        self.store = store
        self.keyFile = keyFile
    }

    public func run() throws -> Outcome {
        let lock = try store.lockKeyRotation()
        defer { lock.release() }
        // Read under the lock: a rotation that finished meanwhile changed the file.
        let ring = try TokenKeyFile.load(path: keyFile)
        let resumed = ring.sealingKeys.count > 1
        let rotated = resumed ? ring : try ring.addingRandomKey()
        let newID = rotated.currentKeyID
        if !resumed { try TokenKeyFile.replace(rotated, at: keyFile) }
        let store = self.store
        try Blocking.result { try await store.useSealingKeys(rotated) }.get()
        try Blocking.result { try await store.announceSealingKey() }.get()
        try waitForServers(toHold: newID)

        var resealed = 0
        for pass in 1...max(1, maxPasses) {
            let batchSize = self.batchSize, onProgress = self.onProgress
            resealed += try Blocking.result {
                try await store.resealTokens(batchSize: batchSize, progress: { onProgress?($0) })
            }.get()
            let usage = try Blocking.result { try await store.sealingKeyUsage() }.get()
            let stillOld = usage.filter { $0.key != newID }.values.reduce(0, +)
            if stillOld == 0 { break }
            if pass == maxPasses { throw KeyRotationError.stillSealedUnderOldKeys(count: stillOld, passes: pass) }
        }

        let retiredIDs = rotated.sealingKeys.map(\.id).filter { $0 != newID }
        if !retiredIDs.isEmpty {
            var retired = rotated
            for id in retiredIDs { retired = try retired.retiring(id) }
            try TokenKeyFile.replace(retired, at: keyFile)
            try Blocking.result { try await store.forgetSealingKeys(retiredIDs) }.get()
        }
        return Outcome(newKeyID: newID, resumed: resumed, resealed: resealed, retiredKeyIDs: retiredIDs)
    }

    /// Polls the servers until every one seals under `keyID`, or throws
    /// `serversWithoutNewKey` after `serverWait`.
    private func waitForServers(toHold keyID: UInt8) throws {
        let store = self.store
        let deadline = ContinuousClock.now + serverWait
        var reported: [SealingKeyHolder]?
        while true {
            let behind = try Blocking.result { try await store.sealingKeyHolders() }.get().filter { $0.currentKeyID != keyID }
            if behind.isEmpty { return }
            guard ContinuousClock.now < deadline else {
                throw KeyRotationError.serversWithoutNewKey(keyID: keyID, servers: behind,
                                                            waitedSeconds: Int(serverWait.components.seconds))
            }
            if behind != reported {
                onWaiting?(behind)
                reported = behind
            }
            usleep(200_000)
        }
    }
}
