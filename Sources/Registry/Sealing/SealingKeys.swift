import Synchronization
import TokenSealing

/// The store's current `TokenVault`, replaced when the key file changes
/// under a running server (`registryd rotate-token-key` in another process).
///
/// Two signals make a server reload its key file: the `sealingKeyID` a
/// rotation writes into `meta` differs from the current key (checked at
/// the start of every write command, inside its transaction, so once the
/// rotation's commit is visible no later write seals under the old key),
/// and a stored value names a key id the vault does not know (a read of a
/// value the rotation re-sealed). Without a reload source (tests, tools),
/// nothing is reloaded.
final class SealingKeys: Sendable {
    private let vault: Mutex<TokenVault>
    private let reload: (@Sendable () throws -> TokenKeyRing)?
    /// When a reload last failed to find the key asked for: the next try
    /// waits a second, so a key file that cannot be read is not re-read on
    /// every write.
    private let lastMiss = Mutex<ContinuousClock.Instant?>(nil)

    init(_ ring: TokenKeyRing, reload: (@Sendable () throws -> TokenKeyRing)?) {
        vault = Mutex(TokenVault(ring: ring))
        self.reload = reload
    }

    var current: TokenVault { vault.withLock { $0 } }

    /// Re-reads the key file; returns whether the vault now knows `keyID`
    /// (and, with `asCurrent`, seals under it). The index key must not
    /// change: a ring with another one is ignored.
    @discardableResult
    func reload(toKnow keyID: UInt8, asCurrent: Bool = false) -> Bool {
        guard let reload else { return false }
        let now = ContinuousClock.now
        if let miss = lastMiss.withLock({ $0 }), now - miss < .seconds(1) { return false }
        guard let ring = try? reload(), ring.indexKey == current.ring.indexKey, ring.sealingKey(id: keyID) != nil,
              !asCurrent || ring.currentKeyID == keyID else {
            lastMiss.withLock { $0 = now }
            return false
        }
        vault.withLock { $0 = TokenVault(ring: ring) }
        lastMiss.withLock { $0 = nil }
        return true
    }
}
