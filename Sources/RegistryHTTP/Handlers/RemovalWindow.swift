import JSON
import RegistryCore

/// What `GET /internal/v1/removals` reports on: the last `count` whole
/// hours or days (UTC), the one that holds now included, so the newest
/// bucket fills up as the hour goes and every bucket starts on the clock's
/// hour or midnight (a chart's labels read as times, not offsets).
///
/// The bounds keep one read short: a week of hours, or ninety days (the
/// default device TTL, past which the sweeper has dropped the history
/// these counts come from).
struct RemovalWindow {
    enum Bucket: String, CaseIterable {
        case hour
        case day

        var milliseconds: Int64 { self == .hour ? 3_600_000 : 86_400_000 }
        var defaultCount: Int { self == .hour ? 24 : 14 }
        var maxCount: Int { self == .hour ? 168 : 90 }
    }

    let bucket: Bucket
    let count: Int
    /// The first bucket's start.
    let from: Timestamp
    /// The end of the bucket that holds now (excluded).
    let to: Timestamp

    var width: Duration { .milliseconds(bucket.milliseconds) }

    /// `bucket` (`hour`, the default, or `day`) and `buckets` (1 to the
    /// bucket's maximum), each refused by name.
    init(_ query: QueryParameters, now: Timestamp) throws(APIError) {
        let name = try query.single("bucket") ?? Bucket.hour.rawValue
        guard let bucket = Bucket(rawValue: name) else { throw .invalidField("bucket", "must be 'hour' or 'day'") }
        var count = bucket.defaultCount
        if let text = try query.single("buckets") {
            guard let n = UInt64(decimalDigits: text), n >= 1, n <= UInt64(bucket.maxCount) else {
                throw .invalidField("buckets", "must be an integer from 1 to \(bucket.maxCount) with bucket=\(bucket.rawValue)")
            }
            count = Int(n)
        }
        self.bucket = bucket
        self.count = count
        let width = bucket.milliseconds
        to = Timestamp(milliseconds: (max(0, now.milliseconds) / width + 1) * width)
        from = Timestamp(milliseconds: to.milliseconds - Int64(count) * width)
    }

    /// Removals by reason (and, for feedback, by APNs reason) in one bucket or in all.
    struct Tally {
        var reasons: [HistoryEvent.Reason: Int] = [:]
        var feedbackReasons: [FeedbackReason: Int] = [:]

        var removed: Int { reasons.values.reduce(0, +) }

        init() {}

        init(summing tallies: [Tally]) {
            for tally in tallies {
                reasons.merge(tally.reasons, uniquingKeysWith: +)
                feedbackReasons.merge(tally.feedbackReasons, uniquingKeysWith: +)
            }
        }

        mutating func add(_ count: RemovalCount) {
            reasons[count.reason, default: 0] += count.count
            if let feedbackReason = count.feedbackReason { feedbackReasons[feedbackReason, default: 0] += count.count }
        }

        /// `{"removed": N, "reasons": {every reason: N}, "feedbackReasons": {every APNs reason: N}}`.
        func write(into w: inout JSONWriter) {
            w.beginObject()
            writeMembers(into: &w)
            w.endObject()
        }

        /// The members of `write`, inside an object the caller opened.
        func writeMembers(into w: inout JSONWriter) {
            w.member("removed", Int64(removed))
            w.key("reasons")
            w.beginObject()
            for reason in HistoryEvent.Reason.allCases {
                w.key(reason.rawValue)
                w.int(Int64(reasons[reason, default: 0]))
            }
            w.endObject()
            w.key("feedbackReasons")
            w.beginObject()
            for reason in FeedbackReason.allCases {
                w.key(reason.rawValue)
                w.int(Int64(feedbackReasons[reason, default: 0]))
            }
            w.endObject()
        }
    }

    struct Point {
        let start: Timestamp
        var tally: Tally
    }

    /// Every bucket of the window, oldest first, with the store's counts added in.
    func series(_ counts: [RemovalCount]) -> [Point] {
        var points = (0..<count).map { i in
            Point(start: Timestamp(milliseconds: from.milliseconds + Int64(i) * bucket.milliseconds), tally: Tally())
        }
        for removal in counts {
            let index = Int((removal.bucketStart.milliseconds - from.milliseconds) / bucket.milliseconds)
            if points.indices.contains(index) { points[index].tally.add(removal) }
        }
        return points
    }
}
