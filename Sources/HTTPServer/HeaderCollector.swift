import CMicroHTTPD

/// Reads a request's headers out of libmicrohttpd, duplicates and order kept.
enum HeaderCollector {
    /// The headers and their size as sent: each `name: value\r\n` line plus
    /// the blank line that ends the block (libmicrohttpd trims the
    /// whitespace around values, so this may undercount by a few bytes).
    struct Collected {
        var headers = HTTPHeaders()
        var bytes = 2
    }

    static func collect(from connection: OpaquePointer) -> Collected {
        var collected = Collected()
        withUnsafeMutablePointer(to: &collected) { pointer in
            _ = MHD_get_connection_values_n(connection, .HEADER_KIND, collectHeaderField, pointer)
        }
        return collected
    }
}

/// `MHD_KeyValueIteratorN` for `HeaderCollector`; `cls` is its `Collected`.
/// A plain global function, never a closure: see docs/architecture.md, "C interop".
func collectHeaderField(_ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind,
                        _ key: UnsafePointer<CChar>?, _ keySize: Int,
                        _ value: UnsafePointer<CChar>?, _ valueSize: Int) -> MHD_Result {
    guard let cls, let key else { return .YES }
    let collected = cls.assumingMemoryBound(to: HeaderCollector.Collected.self)
    let name = String(decoding: UnsafeRawBufferPointer(start: key, count: keySize), as: UTF8.self)
    let text = value.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: valueSize), as: UTF8.self) } ?? ""
    collected.pointee.headers.append(name: name, value: text)
    collected.pointee.bytes += keySize + 2 + valueSize + 2
    return .YES
}
