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
    static func sameName(_ a: String, _ b: String) -> Bool {
        let x = a.utf8, y = b.utf8
        guard x.count == y.count else { return false }
        return zip(x, y).allSatisfy { lower($0) == lower($1) }
    }

    private static func lower(_ byte: UInt8) -> UInt8 {
        (byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte
    }
}
