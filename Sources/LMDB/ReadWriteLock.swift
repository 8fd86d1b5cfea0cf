import Glibc

/// A process-wide readers/writer lock over `pthread_rwlock_t`.
///
/// Every transaction holds it shared; growing the map takes it exclusive,
/// because `mdb_env_set_mapsize` may only run while no transaction is active
/// in this process. glibc's default rwlock prefers readers, so a thread that
/// already holds it shared may take it shared again (a read inside a write).
final class ReadWriteLock: @unchecked Sendable {
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        lock = .allocate(capacity: 1)
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    func shared<T>(_ body: () throws -> T) rethrows -> T {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    func exclusive<T>(_ body: () throws -> T) rethrows -> T {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}
