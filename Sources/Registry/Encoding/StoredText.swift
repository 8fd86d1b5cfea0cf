/// Strings out of stored bytes: strict UTF-8 (corrupt data is refused, never
/// repaired), with a fast path for the ASCII that ids and tokens nearly
/// always are. Reads decode several strings per device, and the generic
/// `String(validating:)` over a slice was a sixth of a batch lookup.
enum StoredText {
    static func decode(_ bytes: ArraySlice<UInt8>) -> String? {
        bytes.withUnsafeBufferPointer { buffer in
            var ascii = true
            for byte in buffer where byte >= 0x80 {
                ascii = false
                break
            }
            // ASCII is valid UTF-8 as it stands, so decoding cannot repair anything.
            return ascii ? String(decoding: buffer, as: UTF8.self) : String(validating: buffer, as: UTF8.self)
        }
    }
}
