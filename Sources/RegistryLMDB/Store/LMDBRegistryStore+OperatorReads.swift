import LMDB
import RegistryCore

/// The reads behind the operator console's figures: counts that open no
/// token, so nothing they return could carry one.
extension LMDBRegistryStore {
    /// One walk of the activity's key range in `activityTokens`, reading
    /// each value's environment byte (kept outside the sealed token).
    public func activityTokenCounts(activityId: String) throws -> [ActivityTokenCount] {
        try reading { read in
            var counts: [String: [APNsEnvironment: Int]] = [:]
            try read.txn.scan(schema.activityTokens, prefix: StoreKey.parts(activityId)) { key, value in
                guard let parts = StoreKey.activityTokenParts(key) else {
                    throw StoredValueError(what: "activity token key", reason: "malformed")
                }
                counts[parts.id.app, default: [:]][try TokenValue.environment(in: value), default: 0] += 1
                return true
            }
            var names = AppCatalog.Names(read.apps)
            var found: [ActivityTokenCount] = []
            for (code, environments) in counts {
                let appId = try names.appId(code, read.txn)
                for (environment, tokens) in environments {
                    found.append(ActivityTokenCount(appId: appId, environment: environment, tokens: tokens))
                }
            }
            return ActivityTokenCount.inOrder(found)
        }
    }

    /// Walks the history entries of the expiry index from `from`'s hour
    /// bucket to `to`'s (the index is in time order; the history database
    /// is in user order), and reads each event in the window.
    public func removalCounts(from: Timestamp, to: Timestamp, bucket: Duration) throws -> [RemovalCount] {
        guard from < to else { return [] }
        let last = ExpiryKey.bucket(of: Timestamp(milliseconds: to.milliseconds - 1))
        return try reading { read in
            var counts: [RemovalKey: Int] = [:]
            try read.txn.scan(schema.expiry, prefix: [ExpiryKey.Kind.history.rawValue],
                              from: ExpiryKey.start(of: .history, bucket: ExpiryKey.bucket(of: from))) { key, _ in
                guard let entry = ExpiryKey(bytes: key), entry.bucket <= last else { return false }
                guard let clock = StoreKey.historyClock(entry.recordKey), clock.at >= from, clock.at < to,
                      let bytes = try read.txn.get(entry.recordKey, in: schema.history) else { return true }
                let event = try HistoryValue(decoding: bytes)
                guard event.action == .removed, let reason = event.reason else { return true }
                let start = RemovalCount.bucketStart(of: clock.at, from: from, width: bucket)
                counts[RemovalKey(bucketStart: start, reason: reason, feedbackReason: event.feedbackReason), default: 0] += 1
                return true
            }
            return counts.map { key, count in
                RemovalCount(bucketStart: key.bucketStart, reason: key.reason, feedbackReason: key.feedbackReason, count: count)
            }
        }
    }
}

/// What `removalCounts` groups by.
private struct RemovalKey: Hashable {
    let bucketStart: Timestamp
    let reason: HistoryEvent.Reason
    let feedbackReason: FeedbackReason?
}
