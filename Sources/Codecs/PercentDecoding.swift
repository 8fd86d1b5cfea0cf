/// RFC 3986 percent-decoding of one URL component (a path segment, a query
/// component, a URL's user or password). `+` is kept as `+` (it is not a
/// space outside HTML forms, and iOS's `URLComponents` does not encode it).
/// The result must be valid UTF-8.
public enum PercentDecoding {
    public static func decode(_ text: some StringProtocol) -> String? {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return String(text) }
        var out: [UInt8] = []
        var bytes = text.utf8.makeIterator()
        while let b = bytes.next() {
            guard b == UInt8(ascii: "%") else { out.append(b); continue }
            guard let hi = bytes.next().flatMap(Hex.digitValue),
                  let lo = bytes.next().flatMap(Hex.digitValue) else { return nil }
            out.append(hi << 4 | lo)
        }
        return String(validating: out, as: UTF8.self)
    }
}
