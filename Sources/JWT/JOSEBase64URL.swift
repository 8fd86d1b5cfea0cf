import Codecs

/// base64url as JWT reads it (token parts, JWK members): Codecs' strict
/// decoding, plus the one leniency JWT has always allowed, `=` padding to a
/// multiple of 4 characters, since some issuers pad (RFC 7515 §2 says to
/// omit it). The characters before the padding are decoded strictly, so the
/// padding is the only second spelling a byte string has.
enum JOSEBase64URL {
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        decode(Array(text.utf8))
    }

    static func decode(_ encoded: [UInt8]) -> [UInt8]? {
        var characters = encoded[...]
        while characters.last == UInt8(ascii: "=") { characters = characters.dropLast() }
        let padding = encoded.count - characters.count
        if padding > 0, padding > 2 || encoded.count % 4 != 0 { return nil }
        return Base64URL.decode(characters)
    }
}
