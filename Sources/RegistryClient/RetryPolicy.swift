/// How long to wait after a transient failure.
///
/// Exponential, so a struggling server sees fewer requests the longer it
/// struggles; bounded, so a device that was offline for a day does not wait a
/// day more once it is back; jittered ("equal jitter": half the step fixed,
/// half random), so a fleet that failed together does not retry together yet
/// no retry comes early. A server's `Retry-After` is a floor (capped at
/// `maximumRetryAfter`, so a bogus header cannot silence a device for good).
public struct RetryPolicy: Sendable {
    public var initialDelay: Duration
    public var multiplier: Double
    public var maximumDelay: Duration
    public var maximumRetryAfter: Duration

    public init(initialDelay: Duration = .seconds(1), multiplier: Double = 2,
                maximumDelay: Duration = .seconds(300), maximumRetryAfter: Duration = .seconds(3600)) {
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maximumDelay = maximumDelay
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// The pause before attempt `failures + 1`, after `failures` (≥ 1)
    /// consecutive transient failures. `random` returns a value in 0...1.
    func delay(afterFailures failures: Int, retryAfter: Duration?, random: () -> Double) -> Duration {
        let initial = Self.seconds(initialDelay), maximum = Self.seconds(maximumDelay)
        let step = min(maximum, initial * Self.power(multiplier, max(0, failures - 1)))
        let jittered = step / 2 + step / 2 * min(1, max(0, random()))
        let floor = retryAfter.map { min(Self.seconds($0), Self.seconds(maximumRetryAfter)) } ?? 0
        return .milliseconds(Int64(max(jittered, floor) * 1000))
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// `base^exponent` without Foundation's `pow`, capped early so a long
    /// outage cannot overflow to infinity.
    private static func power(_ base: Double, _ exponent: Int) -> Double {
        var result = 1.0
        for _ in 0..<min(exponent, 64) { result *= base }
        return result
    }
}
