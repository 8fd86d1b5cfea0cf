import RegistryCore

/// RFC 3339 timestamps as the API writes and reads them, with no
/// `DateFormatter` (not thread-safe to share, and slow per call).
///
/// Output is always UTC with milliseconds: `2026-12-02T11:04:05.123Z`.
/// Input accepts any offset (`Z`, `+02:00`), `T`/`t` and `Z`/`z`, and any
/// number of fractional digits (truncated to milliseconds).
public enum RFC3339 {
    public static func format(_ timestamp: Timestamp) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        write(timestamp, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the timestamp's text to `bytes` (24 bytes for years 0–9999),
    /// built in a stack buffer and appended once: responses write several
    /// per device.
    public static func write(_ timestamp: Timestamp, into bytes: inout [UInt8]) {
        // Floor division that cannot overflow: any Int64 can be stored (an
        // import carries its times as sent), and `ms - 999` traps near Int64.min.
        let (quotient, remainder) = timestamp.milliseconds.quotientAndRemainder(dividingBy: 1000)
        let totalSeconds = remainder < 0 ? quotient - 1 : quotient
        let millis = Int(remainder < 0 ? remainder + 1000 : remainder)
        let days = totalSeconds >= 0 ? totalSeconds / 86_400 : (totalSeconds - 86_399) / 86_400
        let secondOfDay = Int(totalSeconds - days * 86_400)
        let (year, month, day) = civilDate(daysSinceEpoch: days)
        let fourDigitYear = (0...9999).contains(year)
        if !fourDigitYear { bytes.append(contentsOf: pad(year, 4).utf8) }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { out in
            func two(_ value: Int, _ at: Int) {
                out[at] = UInt8(truncatingIfNeeded: 0x30 + value / 10)
                out[at + 1] = UInt8(truncatingIfNeeded: 0x30 + value % 10)
            }
            if fourDigitYear {
                two(Int(year) / 100, 0)
                two(Int(year) % 100, 2)
            }
            out[4] = UInt8(ascii: "-")
            two(Int(month), 5)
            out[7] = UInt8(ascii: "-")
            two(Int(day), 8)
            out[10] = UInt8(ascii: "T")
            two(secondOfDay / 3600, 11)
            out[13] = UInt8(ascii: ":")
            two(secondOfDay / 60 % 60, 14)
            out[16] = UInt8(ascii: ":")
            two(secondOfDay % 60, 17)
            out[19] = UInt8(ascii: ".")
            out[20] = UInt8(truncatingIfNeeded: 0x30 + millis / 100)
            two(millis % 100, 21)
            out[23] = UInt8(ascii: "Z")
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: out[(fourDigitYear ? 0 : 4)...]))
        }
    }

    /// `nil` when `text` is not an RFC 3339 date-time.
    public static func parse(_ text: String) -> Timestamp? {
        let b = Array(text.utf8)
        guard b.count >= 20 else { return nil }
        func number(_ at: Int, _ count: Int) -> Int64? {
            guard at + count <= b.count else { return nil }
            var value: Int64 = 0
            for i in at..<at + count {
                guard b[i] >= 0x30, b[i] <= 0x39 else { return nil }
                value = value * 10 + Int64(b[i] - 0x30)
            }
            return value
        }
        guard let year = number(0, 4), b[4] == UInt8(ascii: "-"), let month = number(5, 2), b[7] == UInt8(ascii: "-"),
              let day = number(8, 2), b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t"),
              let hour = number(11, 2), b[13] == UInt8(ascii: ":"), let minute = number(14, 2),
              b[16] == UInt8(ascii: ":"), let second = number(17, 2) else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month),
              hour <= 23, minute <= 59, second <= 60 else { return nil }
        var i = 19
        var millis: Int64 = 0
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            let start = i
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 {
                if i - start < 3 { millis = millis * 10 + Int64(b[i] - 0x30) }
                i += 1
            }
            guard i > start else { return nil }
            for _ in min(i - start, 3)..<3 { millis *= 10 }
        }
        guard i < b.count else { return nil }
        var offsetSeconds: Int64 = 0
        switch b[i] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            i += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard let oh = number(i + 1, 2), i + 3 < b.count, b[i + 3] == UInt8(ascii: ":"),
                  let om = number(i + 4, 2), oh <= 23, om <= 59 else { return nil }
            offsetSeconds = (oh * 3600 + om * 60) * (b[i] == UInt8(ascii: "+") ? 1 : -1)
            i += 6
        default:
            return nil
        }
        guard i == b.count else { return nil }
        let days = daysSinceEpoch(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        let time = Timestamp(milliseconds: seconds * 1000 + millis)
        // An offset (or a leap second) can carry 9999-12-31 past year 9999 in
        // UTC, or 0000-01-01 before year 0, where `format` has no four-digit
        // year to write: such an instant is refused, not stored unwritable.
        guard representable.contains(time) else { return nil }
        return time
    }

    /// 0000-01-01T00:00:00.000Z ... 9999-12-31T23:59:59.999Z: what `format` writes with four digits.
    static let representable = Timestamp(milliseconds: -62_167_219_200_000)...Timestamp(milliseconds: 253_402_300_799_999)

    /// Years outside 0–9999 (only an import can carry them) keep the text they always had.
    private static func pad(_ value: Int64, _ width: Int) -> String {
        let s = String(value)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    private static func isLeap(_ y: Int64) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }

    private static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Howard Hinnant's days_from_civil.
    private static func daysSinceEpoch(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// Howard Hinnant's civil_from_days.
    private static func civilDate(daysSinceEpoch z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
