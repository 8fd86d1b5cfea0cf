import Synchronization

/// Verified tokens by their full text, so a client that sends the same
/// token on every request pays for RS256/ES256 verification once.
///
/// Only tokens that passed every check are stored; an entry lives until its
/// `exp` + leeway. Limits: at most `capacity` entries; when full, expired
/// entries are dropped first and, if that frees less than a quarter, half of
/// the rest go (in no particular order), which keeps inserts amortised O(1).
/// Memory is bounded by `capacity` × `CompactJWS.maximumLength`.
final class TokenCache: Sendable {
    struct Entry: Sendable {
        var token: VerifiedToken
        var notBefore: Int64?
        /// `exp` + leeway: after this the token can never be valid again.
        var discardAfter: Int64
    }

    let capacity: Int
    private let entries = Mutex<[String: Entry]>([:])

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    var count: Int { entries.withLock { $0.count } }

    func lookup(_ token: String) -> Entry? {
        entries.withLock { $0[token] }
    }

    func remove(_ token: String) {
        _ = entries.withLock { $0.removeValue(forKey: token) }
    }

    func insert(_ token: String, _ entry: Entry, now: Int64) {
        guard capacity > 0 else { return }
        entries.withLock { entries in
            if entries.count >= capacity, entries[token] == nil {
                entries = entries.filter { $0.value.discardAfter >= now }
                if entries.count > capacity - capacity / 4 {
                    let keep = entries.count / 2
                    entries = Dictionary(uniqueKeysWithValues: entries.prefix(keep).map { ($0.key, $0.value) })
                }
            }
            entries[token] = entry
        }
    }
}
