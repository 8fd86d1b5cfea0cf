import COpenSSL
import Synchronization

/// Keyed OpenSSL contexts of one `AESGCM.Key` that finished calls handed
/// back, for the next call to take without allocating, copying the key
/// schedule and wiping it afterwards. Lock-free: a PostgreSQL node's pool
/// threads open tokens at once (a lookup opens one per token), and a
/// `Mutex` around a shared list made them queue on its futex (it was 40% of
/// such a node's CPU samples serving lookups).
///
/// Up to `capacity` slots. `created` marks the slots that hold a context;
/// `idle` (a subset of it) those free to take. Taking clears the slot's
/// `idle` bit by compare-and-swap, so a context has one user at a time; the
/// slot's pointer is written only by the thread that has just claimed the
/// slot's `created` bit, or that holds its context and drops it. When every
/// slot is busy the caller gets `nil` and makes a context of its own.
final class ContextPool: @unchecked Sendable {
    static let capacity = 64

    private let created = Atomic<UInt64>(0)
    private let idle = Atomic<UInt64>(0)
    private let slots: UnsafeMutablePointer<OpaquePointer?>

    init() {
        slots = .allocate(capacity: Self.capacity)
        slots.initialize(repeating: nil, count: Self.capacity)
    }

    /// Frees every context; no call may be in flight (the key is being freed).
    deinit {
        for index in 0..<Self.capacity { if let context = slots[index] { EVP_CIPHER_CTX_free(context) } }
        slots.deallocate()
    }

    /// An idle context and its slot, or a free slot (`context` nil: the
    /// caller makes one and hands it back under that slot), or nil when
    /// every slot is busy.
    func take() -> (slot: Int, context: OpaquePointer?)? {
        var free = idle.load(ordering: .acquiring)
        while free != 0 {
            let slot = free.trailingZeroBitCount
            let (exchanged, now) = idle.compareExchange(expected: free, desired: free & ~(1 << slot),
                                                        ordering: .acquiringAndReleasing)
            if exchanged { return (slot, slots[slot]) }
            free = now
        }
        var used = created.load(ordering: .relaxed)
        while used != .max {
            let slot = (~used).trailingZeroBitCount
            let (exchanged, now) = created.compareExchange(expected: used, desired: used | (1 << slot),
                                                           ordering: .acquiringAndReleasing)
            if exchanged { return (slot, nil) }
            used = now
        }
        return nil
    }

    /// Hands `context`, which finished its call, back to `slot` for reuse.
    func give(_ context: OpaquePointer, to slot: Int) {
        slots[slot] = context
        idle.bitwiseOr(1 << slot, ordering: .releasing)
    }

    /// Frees `context` (it failed, so it is not reused; nil when none could
    /// be made for the slot) and empties `slot`.
    func drop(_ context: OpaquePointer?, from slot: Int) {
        EVP_CIPHER_CTX_free(context)
        slots[slot] = nil
        created.bitwiseAnd(~(1 << slot), ordering: .releasing)
    }
}
