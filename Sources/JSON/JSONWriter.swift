/// Builds JSON response bodies. Strings are always escaped (quotes,
/// backslashes, control characters, and U+2028/2029 for script safety), so
/// nothing a caller sent is echoed back unescaped.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init() {}

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
        case .null: bytes.append(contentsOf: Array("null".utf8))
        case .bool(let b): bytes.append(contentsOf: Array((b ? "true" : "false").utf8))
        case .int(let n): bytes.append(contentsOf: Array(String(n).utf8))
        case .uint(let n): bytes.append(contentsOf: Array(String(n).utf8))
        case .string(let s): writeString(s)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            for (i, (name, member)) in members.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                writeString(name)
                bytes.append(UInt8(ascii: ":"))
                write(member)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)

    private mutating func writeString(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        let utf8 = Array(s.utf8)
        var i = 0
        while i < utf8.count {
            let b = utf8[i]
            switch b {
            case 0x22: bytes.append(contentsOf: [0x5C, 0x22])
            case 0x5C: bytes.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0x00..<0x20, 0x7F: appendUnicodeEscape(UInt32(b))
            case 0xE2 where i + 2 < utf8.count && utf8[i + 1] == 0x80 && (utf8[i + 2] == 0xA8 || utf8[i + 2] == 0xA9):
                appendUnicodeEscape(utf8[i + 2] == 0xA8 ? 0x2028 : 0x2029)
                i += 2
            default: bytes.append(b)
            }
            i += 1
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func appendUnicodeEscape(_ v: UInt32) {
        bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"),
                                  Self.hex[Int(v >> 12 & 0xF)], Self.hex[Int(v >> 8 & 0xF)],
                                  Self.hex[Int(v >> 4 & 0xF)], Self.hex[Int(v & 0xF)]])
    }
}
