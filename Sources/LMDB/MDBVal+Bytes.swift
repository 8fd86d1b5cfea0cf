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
}
