import RegistryCore
@testable import RegistryHTTP

/// Fuzz target `timestamps`: RFC 3339 parsing (feedback `timestamp`) and
/// formatting (every `createdAt`/`lastSeenAt` a response shows, including
/// those of imported records, which may hold any `Int64`).
///
/// Properties: nothing traps; a parsed time formats to text that parses to
/// the same time; any `Int64` of milliseconds formats, and within years
/// 0000–9999 the text parses back to it.
enum TimestampsFuzz {
    /// 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z.
    static let representable: ClosedRange<Int64> = -62_167_219_200_000...253_402_300_799_999

    static func run(_ bytes: [UInt8]) -> [String] {
        var check = FuzzCheck()
        let text = String(decoding: bytes, as: UTF8.self)
        if let parsed = RFC3339.parse(text) {
            let formatted = RFC3339.format(parsed)
            check.expect(RFC3339.parse(formatted) == parsed, "\(text) → \(formatted) does not parse back")
        }
        if bytes.count >= 8 {
            let milliseconds = bytes.prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
            let formatted = RFC3339.format(Timestamp(milliseconds: milliseconds))
            if representable.contains(milliseconds) {
                check.expect(RFC3339.parse(formatted) == Timestamp(milliseconds: milliseconds),
                             "\(milliseconds) ms → \(formatted) does not parse back")
            }
        }
        return check.violations
    }
}
