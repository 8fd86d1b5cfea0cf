import Foundation

/// Where the last `sequence` handed out is kept between launches.
///
/// The server refuses a write whose sequence is older than one it applied for
/// the same (user, device), so sequences must never go backwards, also not
/// across a restart. `save` is called before a request carrying the value is
/// sent, so a crash can skip numbers but never reuse one.
public protocol SequenceStore: Sendable {
    func load() -> UInt64?
    func save(_ sequence: UInt64)
}

/// The default store: one integer in `UserDefaults`.
///
/// Losing it (a reinstall) is survivable because sequences also never fall
/// below the wall clock in milliseconds (see `SequenceGenerator`); an iCloud
/// restore brings back an older value, which the clock floor overtakes too.
public final class UserDefaultsSequenceStore: SequenceStore, @unchecked Sendable {
    // @unchecked: UserDefaults is documented thread-safe but not annotated
    // Sendable on every platform.
    private let defaults: UserDefaults
    private let key: String

    public init(defaults: UserDefaults = .standard, key: String = "RegistryClient.sequence") {
        self.defaults = defaults
        self.key = key
    }

    public func load() -> UInt64? {
        (defaults.object(forKey: key) as? NSNumber)?.uint64Value
    }

    public func save(_ sequence: UInt64) {
        defaults.set(NSNumber(value: sequence), forKey: key)
    }
}

/// A store that lives as long as the object: for tests and previews, or an
/// app that keeps its state elsewhere and copies it in and out.
public final class InMemorySequenceStore: SequenceStore, @unchecked Sendable {
    // @unchecked: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value: UInt64?

    public init(_ initial: UInt64? = nil) { value = initial }

    public func load() -> UInt64? {
        lock.lock()
        defer { lock.unlock() }
        return value
    }

    public func save(_ sequence: UInt64) {
        lock.lock()
        defer { lock.unlock() }
        value = sequence
    }
}

/// Hands out sequences: `max(last + 1, wall-clock milliseconds)`.
///
/// The persisted counter keeps them monotonic when the wall clock steps
/// back; the clock floor keeps them monotonic when the counter is lost
/// (reinstall, cleared defaults), since the last value was at most a little
/// above the clock of its day. One counter serves every (user, device), which
/// is stricter than the per-pair rule the server asks for, and simpler.
struct SequenceGenerator {
    private let store: any SequenceStore
    private var last: UInt64

    init(store: any SequenceStore) {
        self.store = store
        last = store.load() ?? 0
    }

    mutating func next(at date: Date) -> UInt64 {
        let milliseconds = UInt64(max(0, date.timeIntervalSince1970 * 1000))
        last = max(last &+ 1, milliseconds)
        store.save(last)
        return last
    }

    /// After a 409: the server holds `sequence` for this (user, device),
    /// written by another install or before our counter was lost with a
    /// clock behind it. The next value goes above it.
    mutating func raise(past sequence: UInt64) {
        guard sequence > last else { return }
        last = sequence
        store.save(last)
    }
}
