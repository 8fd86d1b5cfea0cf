import RegistryCore
import Codecs
import Glibc

/// Little building blocks of the stored value encoding: LEB128 varints and
/// length-prefixed strings. Decoding never traps: a short or malformed input
/// throws `StoredValueError`.
package struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    package init(version: UInt8) { bytes.append(version) }

    package mutating func byte(_ b: UInt8) { bytes.append(b) }

    package mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    package mutating func timestamp(_ t: Timestamp) { varint(UInt64(bitPattern: t.milliseconds)) }

    package mutating func string(_ s: String) {
        blob(Array(s.utf8))
    }

    /// Raw bytes with their length first (a sealed token).
    package mutating func blob(_ b: [UInt8]) {
        varint(UInt64(b.count))
        bytes.append(contentsOf: b)
    }
}

/// Reads what `ByteWriter` wrote. Generic over where the bytes are, so the
/// hot reads decode values in place in LMDB's map (`UnsafeRawBufferPointer`)
/// and everything else from arrays, with one decoder; both are specialized
/// within this module.
package struct ByteReader<Bytes: RandomAccessCollection<UInt8>> where Bytes.Index == Int {
    private let bytes: Bytes
    private var index: Int
    private let what: String
    /// The leading version byte, so a decoder can read older layouts.
    private(set) var version: UInt8 = 0

    /// Checks the leading version byte against the versions this build reads.
    package init(_ bytes: Bytes, what: String, versions: ClosedRange<UInt8>) throws(StoredValueError) {
        self.bytes = bytes
        self.what = what
        index = bytes.startIndex
        version = try byte()
        guard versions.contains(version) else { throw StoredValueError(what: what, reason: "unknown version \(version)") }
    }

    package mutating func byte() throws(StoredValueError) -> UInt8 {
        guard index < bytes.endIndex else { throw StoredValueError(what: what, reason: "truncated") }
        defer { index += 1 }
        return bytes[index]
    }

    package mutating func varint() throws(StoredValueError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try byte()
            guard shift < 64 else { throw StoredValueError(what: what, reason: "varint too long") }
            value |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return value }
            shift += 7
        }
    }

    package mutating func timestamp() throws(StoredValueError) -> Timestamp {
        Timestamp(milliseconds: Int64(bitPattern: try varint()))
    }

    package mutating func string() throws(StoredValueError) -> String {
        let length = try varint()
        guard length <= UInt64(bytes.endIndex - index) else { throw StoredValueError(what: what, reason: "truncated string") }
        let end = index + Int(length)
        defer { index = end }
        let part = bytes[index..<end]
        guard let s = part.withContiguousStorageIfAvailable(LengthPrefixed.text) ?? LengthPrefixed.text(Array(part)[...]) else {
            throw StoredValueError(what: what, reason: "invalid UTF-8")
        }
        return s
    }

    package mutating func blob() throws(StoredValueError) -> Bytes.SubSequence {
        let length = try varint()
        guard length <= UInt64(bytes.endIndex - index) else { throw StoredValueError(what: what, reason: "truncated bytes") }
        let end = index + Int(length)
        defer { index = end }
        return bytes[index..<end]
    }

    package mutating func enumValue<E: RawRepresentable>(_ type: E.Type, _ all: [E]) throws(StoredValueError) -> E where E.RawValue == String {
        let b = try byte()
        guard Int(b) < all.count else { throw StoredValueError(what: what, reason: "bad \(E.self) \(b)") }
        return all[Int(b)]
    }

    package func finish() throws(StoredValueError) {
        guard index == bytes.endIndex else { throw StoredValueError(what: what, reason: "trailing bytes") }
    }
}

/// Fixed-width big-endian unsigned integers, as keys hold times, buckets,
/// counters and indexes: byte order is then numeric order.
package enum BigEndian {
    /// The low `count` bytes of `value`, most significant first.
    package static func bytes(_ value: UInt64, count: Int) -> [UInt8] {
        (0..<count).reversed().map { UInt8(truncatingIfNeeded: value >> (UInt64($0) * 8)) }
    }

    /// The value of up to 8 bytes, most significant first.
    package static func value(_ bytes: some Collection<UInt8>) -> UInt64 {
        bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// LMDB's key order (bytes compared unsigned, a prefix first) between a key
/// the reader holds and one in place in the map, by `memcmp`: the generic
/// sequence comparisons walk byte by byte through iterators, about 500
/// instructions for a record key.
package enum ByteOrder {
    /// Negative, zero or positive as `a` sorts before, equal to or after `b`.
    package static func compare(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Int {
        let common = min(a.count, b.count)
        let order = a.withUnsafeBytes { a -> Int32 in
            guard common > 0, let left = a.baseAddress, let right = b.baseAddress else { return 0 }
            return memcmp(left, right, common)
        }
        return order != 0 ? Int(order) : a.count - b.count
    }
}
