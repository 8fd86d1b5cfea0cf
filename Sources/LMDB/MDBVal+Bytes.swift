import Glibc
import CLMDB

extension Array where Element == UInt8 {
    /// Lends the bytes to C as an `MDB_val`; LMDB does not write through it.
    func withMDBVal<T>(_ body: (inout MDB_val) throws -> T) rethrows -> T {
        try withUnsafeBytes { buffer in
            var val = MDB_val(mv_size: buffer.count, mv_data: UnsafeMutableRawPointer(mutating: buffer.baseAddress))
            return try body(&val)
        }
    }
}

extension MDB_val {
    /// A copy of the bytes (map memory is valid only inside the transaction).
    var bytes: [UInt8] {
        guard let data = mv_data, mv_size > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: data, count: mv_size))
    }

    /// Whether the bytes start with `prefix`, compared in place (no copy):
    /// a range scan asks this of every key it visits.
    func hasPrefix(_ prefix: [UInt8]) -> Bool {
        guard mv_size >= prefix.count else { return false }
        guard !prefix.isEmpty else { return true }
        guard let data = mv_data else { return false }
        return prefix.withUnsafeBytes { wanted in
            guard let base = wanted.baseAddress else { return false }
            return memcmp(data, base, wanted.count) == 0
        }
    }
}
