/// A list of strings as bytes, each part two bytes of big-endian length
/// then its UTF-8 bytes: no separator can be forged by a part's content
/// (any byte, NUL included, is just content), and the encoding of a prefix
/// of the list is a byte prefix of the whole. The LMDB store's keys, the
/// fan-out cursor and a sealed token's binding to its record use it.
///
/// Limit: a part is at most 65,535 bytes.
public enum LengthPrefixed {
    public static func encode(_ parts: [String]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(parts.reduce(0) { $0 + 2 + $1.utf8.count })
        for part in parts { append(part.utf8, to: &bytes) }
        return bytes
    }

    /// `append` of a string's UTF-8, which callers in other modules reach
    /// specialized (the generic form runs unspecialized there).
    public static func append(_ part: String, to bytes: inout [UInt8]) {
        append(part.utf8, to: &bytes)
    }

    public static func append(_ part: some Collection<UInt8>, to bytes: inout [UInt8]) {
        precondition(part.count <= Int(UInt16.max), "a length-prefixed part is at most 65535 bytes")
        bytes.append(UInt8(truncatingIfNeeded: part.count >> 8))
        bytes.append(UInt8(truncatingIfNeeded: part.count))
        bytes.append(contentsOf: part)
    }

    /// The parts of `bytes`; nil when they are not well formed (a length
    /// past the end, or a part that is not UTF-8).
    public static func decode(_ bytes: some Collection<UInt8>) -> [String]? {
        decode(Array(bytes))
    }

    /// `decode` of an array, which callers in other modules reach
    /// specialized: the generic form runs unspecialized there (witness
    /// calls per byte), and the stores decode a key per record they read.
    public static func decode(_ bytes: [UInt8]) -> [String]? {
        bytes.withUnsafeBufferPointer(decode)
    }

    /// `decode` of bytes in place (a key still in the database's map).
    public static func decode(_ bytes: UnsafeRawBufferPointer) -> [String]? {
        decode(bytes.assumingMemoryBound(to: UInt8.self))
    }

    private static func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> [String]? {
        var parts: [String] = []
        parts.reserveCapacity(4)
        var i = 0
        while i < bytes.count {
            guard i + 2 <= bytes.count else { return nil }
            let length = Int(bytes[i]) << 8 | Int(bytes[i + 1])
            i += 2
            guard i + length <= bytes.count, let part = text(UnsafeBufferPointer(rebasing: bytes[i..<i + length])) else {
                return nil
            }
            parts.append(part)
            i += length
        }
        return parts
    }

    /// Strict UTF-8 (corrupt data is refused, never repaired), with a fast
    /// path for the ASCII that ids nearly always are: the generic
    /// `String(validating:)` over a slice was a sixth of a batch lookup.
    public static func text(_ bytes: ArraySlice<UInt8>) -> String? {
        bytes.withUnsafeBufferPointer(text)
    }

    /// `text` of bytes in place (a value still in the database's map).
    public static func text(_ buffer: UnsafeBufferPointer<UInt8>) -> String? {
        var ascii = true
        for byte in buffer where byte >= 0x80 {
            ascii = false
            break
        }
        // ASCII is valid UTF-8 as it stands, so decoding cannot repair anything.
        return ascii ? String(decoding: buffer, as: UTF8.self) : String(validating: buffer, as: UTF8.self)
    }
}
