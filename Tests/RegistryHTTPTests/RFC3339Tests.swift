import Foundation
import RegistryCore
import Testing
@testable import RegistryHTTP

@Suite struct RFC3339Tests {
    /// An offset or a leap second can carry the last day of year 9999 (or
    /// the first of year 0) out of the four-digit years `format` writes;
    /// such text is refused (fuzz finding `rfc3339-offset-past-year-9999`).
    @Test func instantsOutsideFourDigitYearsAreRefused() {
        #expect(RFC3339.parse("9999-12-31t23:59:60.99999-02:30") == nil)
        #expect(RFC3339.parse("9999-12-31T23:59:59.999-00:01") == nil)
        #expect(RFC3339.parse("0000-01-01T00:00:00+00:01") == nil)
        let last = RFC3339.parse("9999-12-31T23:59:59.999Z")
        #expect(last.map(RFC3339.format) == "9999-12-31T23:59:59.999Z")
        #expect(RFC3339.parse("0000-01-01T00:00:00Z").map(RFC3339.format) == "0000-01-01T00:00:00.000Z")
    }

    @Test func formatsUTCWithMilliseconds() {
        #expect(RFC3339.format(Timestamp(milliseconds: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(RFC3339.format(Timestamp(milliseconds: 1_796_209_445_123)) == "2026-12-02T11:04:05.123Z")
        #expect(RFC3339.format(Timestamp(milliseconds: 951_782_400_000)) == "2000-02-29T00:00:00.000Z")
        #expect(RFC3339.format(Timestamp(milliseconds: -1)) == "1969-12-31T23:59:59.999Z")
    }

    @Test func parsesOffsetsAndFractions() {
        #expect(RFC3339.parse("2026-12-02T11:04:05.123Z")?.milliseconds == 1_796_209_445_123)
        #expect(RFC3339.parse("2026-12-02T12:04:05.123+01:00")?.milliseconds == 1_796_209_445_123)
        #expect(RFC3339.parse("2026-12-02t11:04:05z")?.milliseconds == 1_796_209_445_000)
        #expect(RFC3339.parse("2026-12-02T11:04:05.123456789Z")?.milliseconds == 1_796_209_445_123)
        #expect(RFC3339.parse("2026-12-02T11:04:05.1Z")?.milliseconds == 1_796_209_445_100)
    }

    @Test(arguments: ["", "2026-12-02", "2026-12-02T11:04:05", "2026-13-02T11:04:05Z", "2026-02-30T00:00:00Z",
                      "2026-12-02T24:00:00Z", "2026-12-02T11:04:05.Z", "2026-12-02T11:04:05+0100", "x026-12-02T11:04:05Z",
                      "2026-12-02T11:04:05Zjunk"])
    func rejectsMalformed(_ text: String) {
        #expect(RFC3339.parse(text) == nil)
    }

    /// Found by `tools/fuzz` (target `timestamps`): formatting trapped on
    /// arithmetic overflow for the oldest Int64 times, which an import can store.
    @Test func formatsEveryInt64WithoutTrapping() {
        #expect(RFC3339.format(Timestamp(milliseconds: .min)).hasSuffix(".192Z"))
        #expect(RFC3339.format(Timestamp(milliseconds: .min + 998)).hasSuffix(".190Z"))
        #expect(RFC3339.format(Timestamp(milliseconds: .max)).hasSuffix(".807Z"))
        #expect(RFC3339.format(Timestamp(milliseconds: -1_001)) == "1969-12-31T23:59:58.999Z")
    }

    @Test func roundTrips() {
        for ms: Int64 in [0, 1, 999, 86_399_999, 1_700_000_000_000, 4_102_444_800_000] {
            #expect(RFC3339.parse(RFC3339.format(Timestamp(milliseconds: ms)))?.milliseconds == ms)
        }
    }
}

@Suite struct RFC3339WriterTests {
    /// The byte writer against Foundation's formatter, across the years it covers.
    @Test func agreesWithFoundationOnRandomInstants() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            // 1900 to 2200: Foundation's own calendar arithmetic is exact there.
            let ms = Int64.random(in: -2_208_988_800_000...7_258_118_400_000, using: &generator)
            let ours = RFC3339.format(Timestamp(milliseconds: ms))
            let date = Date(timeIntervalSince1970: Double(ms) / 1000)
            #expect(ours == formatter.string(from: date), "\(ms)")
            #expect(RFC3339.parse(ours) == Timestamp(milliseconds: ms))
        }
    }

    @Test func appendsToWhatIsThere() {
        var bytes = Array("x=".utf8)
        RFC3339.write(Timestamp(milliseconds: 1_796_209_445_123), into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "x=2026-12-02T11:04:05.123Z")
    }
}
