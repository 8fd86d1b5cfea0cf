/// base64url (RFC 4648 §5) without padding: the one spelling the registry's
/// cursors and JWT's tokens and keys use.
///
/// Decoding is strict, so each byte string has exactly one accepted text:
/// `=` (padding) and any other character outside the alphabet, a length no
/// encoder produces (4n + 1), and non-zero unused bits in the last character
/// are all refused. A second spelling of the same bytes would let a signed
/// cursor or token be altered without changing what it says.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Each byte's 6-bit value, or 0xFF for a byte outside the alphabet.
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, character) in alphabet.enumerated() {
            table[Int(character)] = UInt8(value)
        }
        return table
    }()

    /// Encodes without padding.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count * 4 + 2) / 3)
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = iterator.next()
            let group = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
            output.append(alphabet[Int(group >> 18 & 0x3F)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
            if second != nil { output.append(alphabet[Int(group >> 6 & 0x3F)]) }
            if third != nil { output.append(alphabet[Int(group & 0x3F)]) }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes `text` spells, or `nil` when it is not their one unpadded spelling.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        decode(text.utf8)
    }

    /// The bytes `encoded` spells, or `nil` when it is not their one unpadded spelling.
    public static func decode(_ encoded: some Collection<UInt8>) -> [UInt8]? {
        guard encoded.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(encoded.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in encoded {
            let value = decodeTable[Int(character)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        guard accumulator == 0 else { return nil }
        return output
    }
}
