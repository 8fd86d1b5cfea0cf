/// A point in time with millisecond precision: what the API shows and what
/// the store keeps. Milliseconds since the Unix epoch, UTC.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    public init(secondsSince1970 seconds: Double) {
        self.milliseconds = Int64((seconds * 1000).rounded(.down))
    }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.milliseconds < b.milliseconds }

    public func adding(seconds: Int64) -> Timestamp {
        Timestamp(milliseconds: milliseconds &+ seconds &* 1000)
    }

    /// `duration` earlier, to the millisecond: a TTL's cutoff. Wraps rather
    /// than traps, like `adding(seconds:)`.
    public func subtracting(_ duration: Duration) -> Timestamp {
        Timestamp(milliseconds: milliseconds &- Self.milliseconds(in: duration))
    }

    /// `duration` later, to the millisecond (a retry's time). Wraps rather than traps.
    public func adding(_ duration: Duration) -> Timestamp {
        Timestamp(milliseconds: milliseconds &+ Self.milliseconds(in: duration))
    }

    /// A duration's whole milliseconds (rounded down).
    private static func milliseconds(in duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds &* 1000 &+ attoseconds / 1_000_000_000_000_000
    }

    public var description: String { "\(milliseconds)ms" }

    /// What a stored or imported time may be: from the epoch to the last
    /// millisecond of year 9999, the range RFC 3339 output can spell.
    public static let plausibleRange = Timestamp(milliseconds: 0)...Timestamp(milliseconds: 253_402_300_799_999)
}
