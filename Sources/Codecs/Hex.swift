/// Hexadecimal (RFC 4648 §8, base16): lowercase when encoding, either case
/// when decoding, and nothing else accepted (no `0x`, no spaces, an even
/// number of digits).
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Two lowercase digits per byte.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes `text` spells, or `nil` for an odd length or a non-hex character.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        decode(text.utf8)
    }

    /// The bytes `encoded` spells, or `nil` for an odd length or a non-hex character.
    public static func decode(_ encoded: some Collection<UInt8>) -> [UInt8]? {
        guard encoded.count % 2 == 0 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(encoded.count / 2)
        var iterator = encoded.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            guard let h = digitValue(high), let l = digitValue(low) else { return nil }
            output.append(h << 4 | l)
        }
        return output
    }

    /// The value of one hex digit (`0-9`, `a-f`, `A-F`), or `nil`.
    public static func digitValue(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
