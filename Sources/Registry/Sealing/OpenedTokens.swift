import Synchronization

/// Tokens already opened, keyed by their sealed value and kind, so the
/// read path (a sender lookup opens two tokens per device) does not run
/// AES-GCM again for a value it authenticated before. A sealed value
/// (random nonce, authenticated with its kind as context) opens to exactly
/// one token, and a re-sealed one has other bytes, so an entry never goes
/// stale; only values that opened are cached, and the kind is part of the
/// key, so a value moved into another kind's slot still fails to open.
///
/// Memory only (tokens are sealed at rest, not in the process), bounded:
/// two generations of at most `capacity / 2` entries each; a hit in the
/// older one is promoted, and when the newer one fills up the older one is
/// dropped (an approximate LRU without per-entry bookkeeping).
final class OpenedTokens: Sendable {
    private struct Generations {
        var current: [SealedKey: String] = [:]
        var previous: [SealedKey: String] = [:]
    }

    /// The sealed bytes and kind, hashed as one byte string.
    struct SealedKey: Hashable, Sendable {
        let bytes: [UInt8]

        func hash(into hasher: inout Hasher) {
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    private let generationSize: Int
    private let generations = Mutex(Generations())

    init(capacity: Int = 200_000) {
        generationSize = max(1, capacity / 2)
    }

    func token(for key: SealedKey) -> String? {
        generations.withLock { g in
            if let hit = g.current[key] { return hit }
            guard let old = g.previous[key] else { return nil }
            g.current[key] = old
            rotateIfFull(&g)
            return old
        }
    }

    func remember(_ token: String, for key: SealedKey) {
        generations.withLock { g in
            g.current[key] = token
            rotateIfFull(&g)
        }
    }

    private func rotateIfFull(_ g: inout Generations) {
        guard g.current.count >= generationSize else { return }
        g.previous = g.current
        g.current = [:]
    }
}
