/// A request's header fields in the order they arrived.
///
/// Duplicates are kept (a repeated `Content-Length` is a framing error the
/// server must be able to see), and lookup ignores ASCII case as HTTP
/// requires. Lookup is a linear scan: a request carries tens of headers, not
/// thousands, and the server caps their total size.
public struct HTTPHeaders: Sendable {
    private var storage: [(name: String, value: String)]

    public init(_ pairs: [(String, String)] = []) {
        storage = pairs.map { (name: $0.0, value: $0.1) }
    }

    /// The first value of `name`, or nil when the header is absent.
    public subscript(_ name: String) -> String? {
        storage.first { Self.sameName($0.name, name) }?.value
    }

    /// Every value of `name`, in arrival order.
    public func values(_ name: String) -> [String] {
        storage.filter { Self.sameName($0.name, name) }.map(\.value)
    }

    /// All fields as sent, duplicates included.
    public var pairs: [(name: String, value: String)] { storage }

    public mutating func append(name: String, value: String) {
        storage.append((name: name, value: value))
    }

    /// ASCII case-insensitive comparison; header names are ASCII tokens, so
    /// Unicode case folding would be both slower and wrong.
    /// Over the two contiguous buffers: zipping the UTF-8 views cost about
    /// 120 instructions a header name, and every request looks up several.
    static func sameName(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        var a = a, b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in
                for i in x.indices where lower(x[i]) != lower(y[i]) { return false }
                return true
            }
        }
    }

    private static func lower(_ byte: UInt8) -> UInt8 {
        (byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte
    }
}
