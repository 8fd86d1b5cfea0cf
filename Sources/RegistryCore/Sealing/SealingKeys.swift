import Synchronization
import TokenSealing

/// The store's current `TokenVault`, replaced when the key file changes
/// under a running process (`registryd rotate-token-key` in another process
/// or on another node).
///
/// A rotation announces its new key in the registry itself (`meta`,
/// `registry_meta`), and every write reads that announcement in its own
/// transaction (`forWriting`): a process whose key is older reloads the key
/// file first, and one that cannot (an unreadable file, a copy without the
/// key, a key that is not the registry's) refuses to seal (503) rather than
/// seal under a key the rotation is retiring. A read that meets a value
/// under a key the vault does not hold reloads too (`reload(toKnow:)`).
///
/// Every reload is checked: each sealing key the registry recorded a check
/// value for must open it (`checks`), so a file holding another key under
/// a known id is refused, not installed. Without a reload source (tests,
/// tools), nothing is reloaded.
package final class SealingKeys: Sendable {
    private let vault: Mutex<TokenVault>
    private let reload: (@Sendable () throws -> TokenKeyRing)?
    /// When a reload last failed to bring the key asked for: the next try
    /// waits a second, so a key file that cannot be read is not re-read on
    /// every write.
    private let lastMiss = Mutex<ContinuousClock.Instant?>(nil)

    package init(_ ring: TokenKeyRing, reload: (@Sendable () throws -> TokenKeyRing)?) {
        vault = Mutex(TokenVault(ring: ring))
        self.reload = reload
    }

    package var current: TokenVault { vault.withLock { $0 } }

    /// The vault a write uses, given the sealing key the registry announces
    /// (`nil`: no rotation ever announced one). A vault whose current key is
    /// older than the announced one reloads the key file; when that does not
    /// bring the announced key as current, the vault returned refuses to seal
    /// (the write may still remove tokens). A vault with a newer key than
    /// the announced one is a rotation's own, or a process started after
    /// the rotation wrote the key file: it seals under its key.
    package func forWriting(announced: UInt8?, checks: (TokenKeyRing) throws -> Void) -> TokenVault {
        let vault = current
        guard let announced, vault.ring.currentKeyID < announced else { return vault }
        if reload(toKnow: announced, asCurrent: true, checks: checks) { return current }
        return vault.refusingToSeal(.unavailable(reason: "a token key rotation made sealing key \(announced) current, and this process's token key file does not hold it (or cannot be read); writes that store a token wait until it does"))
    }

    /// Re-reads the key file; returns whether the vault now knows `keyID`
    /// (and, with `asCurrent`, seals under it). A ring with another index
    /// key, or whose sealing keys fail `checks`, is not installed.
    @discardableResult
    package func reload(toKnow keyID: UInt8, asCurrent: Bool = false, checks: (TokenKeyRing) throws -> Void) -> Bool {
        guard let reload else { return false }
        let now = ContinuousClock.now
        if let miss = lastMiss.withLock({ $0 }), now - miss < .seconds(1) { return false }
        guard let ring = try? reload(), ring.indexKey == current.ring.indexKey, ring.sealingKey(id: keyID) != nil,
              !asCurrent || ring.currentKeyID == keyID, (try? checks(ring)) != nil else {
            lastMiss.withLock { $0 = now }
            return false
        }
        install(ring)
        return true
    }

    /// Makes `ring` the vault's (a rotation, after writing it to the key file).
    package func install(_ ring: TokenKeyRing) {
        vault.withLock { $0 = TokenVault(ring: ring) }
        lastMiss.withLock { $0 = nil }
    }
}
