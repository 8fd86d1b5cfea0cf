/// A top-level member's value as the sender wrote it, compacted: the
/// registry forwards a notification's `payload` to APNs byte for byte in
/// the caller's member order (a parsed `JSONObject` keeps no order), only
/// without insignificant whitespace.
public enum JSONMemberText {
    /// The compact text of member `name` of the object `body` (the last
    /// one, as the parser keeps the last of duplicate members); `nil` when
    /// absent. `body` must already have parsed as a JSON object.
    public static func compact(_ name: String, in body: [UInt8]) -> [UInt8]? {
        valueRange(name, in: body).map { compact(body[$0]) }
    }

    /// Where the value of member `name` of the object `body` lies (the last
    /// one), up to the `,` or `}` after it (whitespace before that
    /// included); `nil` when absent. A caller splices a member's value in
    /// place with it (FCM's `android.ttl`), keeping every other byte.
    public static func valueRange(_ name: String, in body: [UInt8]) -> Range<Int>? {
        var found: Range<Int>?
        var depth = 0
        var index = 0
        var expectingKey = false
        var pendingKey: String?
        var valueStart: Int?
        while index < body.count {
            let byte = body[index]
            switch byte {
            case UInt8(ascii: "\""):
                let end = stringEnd(body[...], from: index)
                if depth == 1 && expectingKey {
                    pendingKey = key(body[index..<end])
                    expectingKey = false
                } else if depth == 1 && valueStart == nil, pendingKey != nil {
                    valueStart = index
                }
                index = end
                continue
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                if depth == 1 && valueStart == nil && pendingKey != nil { valueStart = index }
                depth += 1
                if depth == 1 { expectingKey = true }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if depth == 1 { close(&found, &pendingKey, &valueStart, name, index) }
                depth -= 1
            case UInt8(ascii: ","):
                if depth == 1 {
                    close(&found, &pendingKey, &valueStart, name, index)
                    expectingKey = true
                }
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: ":"):
                break
            default:
                if depth == 1 && valueStart == nil && pendingKey != nil { valueStart = index }
            }
            index += 1
        }
        return found
    }

    private static func close(_ found: inout Range<Int>?, _ pendingKey: inout String?, _ valueStart: inout Int?,
                              _ name: String, _ end: Int) {
        if let start = valueStart, let key = pendingKey, key.utf8.elementsEqual(name.utf8) { found = start..<end }
        pendingKey = nil
        valueStart = nil
    }

    /// The index just past the string that opens at `start`.
    private static func stringEnd(_ body: ArraySlice<UInt8>, from start: Int) -> Int {
        var index = start + 1
        while index < body.endIndex {
            switch body[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        return index
    }

    /// A member name as the parser reads it (escapes decoded).
    private static func key(_ text: ArraySlice<UInt8>) -> String? {
        guard case .string(let s)? = try? JSONParser.parse(Array(text)) else { return nil }
        return s
    }

    /// The value without whitespace outside its strings.
    private static func compact(_ text: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var index = text.startIndex
        while index < text.endIndex {
            let byte = text[index]
            if byte == UInt8(ascii: "\"") {
                let end = min(stringEnd(text, from: index), text.endIndex)
                out.append(contentsOf: text[index..<end])
                index = end
                continue
            }
            if byte != UInt8(ascii: " ") && byte != UInt8(ascii: "\t") && byte != UInt8(ascii: "\n") && byte != UInt8(ascii: "\r") {
                out.append(byte)
            }
            index += 1
        }
        return out
    }
}
