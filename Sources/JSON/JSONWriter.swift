/// Builds JSON documents straight into bytes. Strings are always escaped
/// (quotes, backslashes, control characters, DEL, and U+2028/2029 for script
/// safety), so nothing a caller sent is echoed back unescaped.
///
/// Two ways in: streaming calls (`beginObject`, `member`, …) for the hot
/// response paths, which build no intermediate values, and `Value` for small
/// documents where a tree reads better (errors, stats, log lines). Both go
/// through the same escaper.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    /// Whether the next value or key needs a `,` before it.
    private var needsComma = false

    public init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    /// A value that knows how to write itself.
    public indirect enum Value: Sendable {
        case null
        case bool(Bool)
        case int(Int64)
        case uint(UInt64)
        case string(String)
        case array([Value])
        /// Members in the order given, so responses read the same every time.
        case object([(String, Value)])
    }

    public static func encode(_ value: Value) -> [UInt8] {
        var writer = JSONWriter()
        writer.write(value)
        return writer.bytes
    }

    public mutating func write(_ value: Value) {
        switch value {
        case .null: null()
        case .bool(let b): bool(b)
        case .int(let n): int(n)
        case .uint(let n): uint(n)
        case .string(let s): string(s)
        case .array(let elements):
            beginArray()
            for element in elements { write(element) }
            endArray()
        case .object(let members):
            beginObject()
            for (name, member) in members {
                key(name)
                write(member)
            }
            endObject()
        }
    }

    // MARK: Streaming

    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// An object member's name from data (escaped); the value comes next.
    public mutating func key(_ name: String) {
        separate()
        appendEscaped(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// An object member's name written in the source: copied as is, so it
    /// must be plain ASCII with nothing to escape (checked in debug builds).
    public mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { utf8 in
            assert(utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C }, "key needs escaping")
            bytes.append(contentsOf: utf8)
        }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    public mutating func null() {
        separate()
        bytes.append(contentsOf: [UInt8(ascii: "n"), UInt8(ascii: "u"), UInt8(ascii: "l"), UInt8(ascii: "l")])
        needsComma = true
    }

    public mutating func bool(_ b: Bool) {
        separate()
        if b {
            bytes.append(contentsOf: [UInt8(ascii: "t"), UInt8(ascii: "r"), UInt8(ascii: "u"), UInt8(ascii: "e")])
        } else {
            bytes.append(contentsOf: [UInt8(ascii: "f"), UInt8(ascii: "a"), UInt8(ascii: "l"), UInt8(ascii: "s"),
                                      UInt8(ascii: "e")])
        }
        needsComma = true
    }

    public mutating func int(_ n: Int64) {
        separate()
        if n < 0 {
            bytes.append(UInt8(ascii: "-"))
            appendDigits(n.magnitude)
        } else {
            appendDigits(UInt64(n))
        }
        needsComma = true
    }

    public mutating func uint(_ n: UInt64) {
        separate()
        appendDigits(n)
        needsComma = true
    }

    public mutating func string(_ s: String) {
        separate()
        appendEscaped(s)
        needsComma = true
    }

    /// A string the caller writes itself with `write`, between the quotes,
    /// unescaped: only for text the service formats (timestamps), never for
    /// anything a client sent.
    public mutating func string(unescaped write: (inout [UInt8]) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        write(&bytes)
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    public mutating func member(_ name: StaticString, _ value: String) {
        key(name)
        string(value)
    }

    /// `null` when `value` is nil.
    public mutating func member(_ name: StaticString, _ value: String?) {
        key(name)
        if let value { string(value) } else { null() }
    }

    public mutating func member(_ name: StaticString, _ value: Bool) {
        key(name)
        bool(value)
    }

    public mutating func member(_ name: StaticString, _ value: Int64) {
        key(name)
        int(value)
    }

    /// `null` when `value` is nil.
    public mutating func member(_ name: StaticString, _ value: UInt64?) {
        key(name)
        if let value { uint(value) } else { null() }
    }

    // MARK: Bytes

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    private mutating func appendDigits(_ n: UInt64) {
        guard n >= 10 else {
            bytes.append(UInt8(ascii: "0") + UInt8(n))
            return
        }
        // 20 digits hold UInt64.max; written backwards into a fixed buffer.
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { buffer in
            var value = n
            var at = buffer.count
            while value > 0 {
                at -= 1
                buffer[at] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
            }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[at...]))
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)

    /// Copies runs that need no escaping in one go; most strings are one run.
    private mutating func appendEscaped(_ s: String) {
        var s = s
        bytes.append(UInt8(ascii: "\""))
        s.withUTF8 { utf8 in
            var runStart = 0
            var i = 0
            while i < utf8.count {
                // Eight plain bytes at a time; a word that may hold one goes byte by byte.
                if i + 8 <= utf8.count, let base = utf8.baseAddress,
                   !Self.mayNeedEscaping(UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)) {
                    i += 8
                    continue
                }
                let b = utf8[i]
                // Everything at or above 0x20 is itself, except `"`, `\`, DEL and the lead byte of U+2028/2029.
                if b >= 0x20, b != 0x22, b != 0x5C, b != 0x7F, b != 0xE2 {
                    i += 1
                    continue
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i]))
                switch b {
                case 0x22: bytes.append(contentsOf: [0x5C, 0x22])
                case 0x5C: bytes.append(contentsOf: [0x5C, 0x5C])
                case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
                case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
                case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
                case 0xE2 where i + 2 < utf8.count && utf8[i + 1] == 0x80 && (utf8[i + 2] == 0xA8 || utf8[i + 2] == 0xA9):
                    appendUnicodeEscape(utf8[i + 2] == 0xA8 ? 0x2028 : 0x2029)
                    i += 2
                case 0xE2: bytes.append(b)
                default: appendUnicodeEscape(UInt32(b))
                }
                i += 1
                runStart = i
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<utf8.count]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Whether any of the eight bytes is below 0x20, a quote, a backslash, or 0x7F and
    /// above (DEL, and every non-ASCII byte, so U+2028/2029 are looked at).
    /// Exact in the direction that matters: it never misses one.
    static func mayNeedEscaping(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        func hasZeroByte(_ v: UInt64) -> Bool { (v &- ones) & ~v & highs != 0 }
        let control = (word &- 0x2020_2020_2020_2020) & ~word & highs
        let highOrDEL = (word | (word &+ ones)) & highs
        return control != 0 || highOrDEL != 0 || hasZeroByte(word ^ 0x2222_2222_2222_2222)
            || hasZeroByte(word ^ 0x5C5C_5C5C_5C5C_5C5C)
    }

    private mutating func appendUnicodeEscape(_ v: UInt32) {
        bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"),
                                  Self.hex[Int(v >> 12 & 0xF)], Self.hex[Int(v >> 8 & 0xF)],
                                  Self.hex[Int(v >> 4 & 0xF)], Self.hex[Int(v & 0xF)]])
    }
}
