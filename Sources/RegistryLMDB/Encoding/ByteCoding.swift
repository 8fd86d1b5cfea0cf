import RegistryCore
import Codecs

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

package struct ByteReader {
    private let bytes: [UInt8]
    private var index = 0
    private let what: String
    /// The leading version byte, so a decoder can read older layouts.
    private(set) var version: UInt8 = 0

    /// Checks the leading version byte against the versions this build reads.
    package init(_ bytes: [UInt8], what: String, versions: ClosedRange<UInt8>) throws(StoredValueError) {
        self.bytes = bytes
        self.what = what
        version = try byte()
        guard versions.contains(version) else { throw StoredValueError(what: what, reason: "unknown version \(version)") }
    }

    package mutating func byte() throws(StoredValueError) -> UInt8 {
        guard index < bytes.count else { throw StoredValueError(what: what, reason: "truncated") }
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
        guard length <= UInt64(bytes.count - index) else { throw StoredValueError(what: what, reason: "truncated string") }
        let end = index + Int(length)
        defer { index = end }
        guard let s = LengthPrefixed.text(bytes[index..<end]) else {
            throw StoredValueError(what: what, reason: "invalid UTF-8")
        }
        return s
    }

    package mutating func blob() throws(StoredValueError) -> ArraySlice<UInt8> {
        let length = try varint()
        guard length <= UInt64(bytes.count - index) else { throw StoredValueError(what: what, reason: "truncated bytes") }
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
        guard index == bytes.count else { throw StoredValueError(what: what, reason: "trailing bytes") }
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
