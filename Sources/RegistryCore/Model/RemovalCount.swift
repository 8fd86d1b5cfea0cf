/// How many token removals the users' histories recorded in one time
/// bucket for one reason (and, for feedback, one APNs reason): one point of
/// the "removals over time" series an operator reads to answer "how many
/// tokens did APNs remove today, and why?".
///
/// It is counted from token history, so it has history's limits: a user
/// keeps the newest `HistoryEvent.maxPerUser` events and the sweeper drops
/// events older than the device TTL; removals of a user past those are not
/// counted.
public struct RemovalCount: Hashable, Sendable {
    /// The first millisecond of the bucket the removals fell in.
    public var bucketStart: Timestamp
    public var reason: HistoryEvent.Reason
    /// APNs' reason, when `reason` is `feedback`.
    public var feedbackReason: FeedbackReason?
    public var count: Int

    public init(bucketStart: Timestamp, reason: HistoryEvent.Reason, feedbackReason: FeedbackReason?, count: Int) {
        self.bucketStart = bucketStart
        self.reason = reason
        self.feedbackReason = feedbackReason
        self.count = count
    }

    /// The start of the bucket of width `width` (from `from`) that `at` falls in.
    /// Both engines bucket with it, so a series is the same on either.
    package static func bucketStart(of at: Timestamp, from: Timestamp, width: Duration) -> Timestamp {
        let step = max(1, from.adding(width).milliseconds - from.milliseconds)
        return Timestamp(milliseconds: from.milliseconds + (at.milliseconds - from.milliseconds) / step * step)
    }
}
