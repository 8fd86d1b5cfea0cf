import JSON
import RegistryCore
import Synchronization

/// Everything `/metrics` shows. Request, commit and sweep observations are
/// recorded as they happen; record counts and storage use are read from the
/// store at scrape time (O(1) per database).
///
/// Label values are bounded: routes are path templates, statuses are the
/// contract's, kinds and reasons are enums, so no caller input becomes a series.
public final class RegistryMetrics: Sendable {
    private struct State {
        var requests: [RequestKey: UInt64] = [:]
        var latency: [String: Histogram] = [:]
        var batchSizes = Histogram(bounds: Histogram.batchSizes)
        var commitSeconds = Histogram(bounds: Histogram.latencySeconds)
        var failedBatches: UInt64 = 0
        var sweepRuns: [String: UInt64] = [:]
        var sweptRecords: [String: UInt64] = [:]
        var lastSweepSeconds: Double = 0
        var sweepStepSeconds = Histogram(bounds: Histogram.latencySeconds)
        var feedbackRemoved: [String: UInt64] = [:]
        var unreadableTokens: UInt64 = 0
    }

    private struct RequestKey: Hashable {
        var route: String
        var status: Int
    }

    private let state = Mutex(State())
    /// The sender's observations (`DeliveryObserver`), rendered with the rest.
    public let delivery = DeliveryMetrics()

    public init() {}

    public func recordRequest(route: String, status: Int, seconds: Double) {
        state.withLock { s in
            s.requests[RequestKey(route: route, status: status), default: 0] += 1
            s.latency[route, default: Histogram(bounds: Histogram.latencySeconds)].observe(seconds)
        }
    }

    public func recordCommit(_ report: CommitBatchReport) {
        state.withLock { s in
            s.batchSizes.observe(Double(report.commands))
            s.commitSeconds.observe(report.seconds)
            if !report.succeeded { s.failedBatches += 1 }
        }
    }

    public func recordSweep(_ result: Result<SweepCounts, any Error>, seconds: Double) {
        state.withLock { s in
            s.lastSweepSeconds = seconds
            switch result {
            case .success(let counts):
                s.sweepRuns["ok", default: 0] += 1
                s.sweptRecords["devices", default: 0] += UInt64(counts.devices)
                s.sweptRecords["pushToStartTokens", default: 0] += UInt64(counts.pushToStartTokens)
                s.sweptRecords["activityTokens", default: 0] += UInt64(counts.activityTokens)
                s.sweptRecords["tombstones", default: 0] += UInt64(counts.tombstones)
            case .failure(is CancellationError):
                s.sweepRuns["interrupted", default: 0] += 1
            case .failure:
                s.sweepRuns["error", default: 0] += 1
            }
        }
    }

    /// One bounded step of a sweep: how long it held its transaction (for
    /// a real sweep, how long it held the writer).
    public func recordSweepStep(_ report: SweepBatchReport) {
        guard !report.dryRun else { return }
        state.withLock { s in s.sweepStepSeconds.observe(report.seconds) }
    }

    public func recordFeedback(reason: FeedbackReason, removed: Int) {
        state.withLock { s in s.feedbackRemoved[reason.rawValue, default: 0] += UInt64(removed) }
    }

    /// Stored tokens a read passed over because their sealed value does not open.
    public func recordUnreadableTokens(_ count: Int) {
        state.withLock { s in s.unreadableTokens += UInt64(count) }
    }

    /// The exposition text; `stats` is `nil` when the store could not be read.
    public func render(stats: StoreStats?) -> String {
        let s = state.withLock { $0 }
        var out = ""
        PrometheusText.header("registry_http_requests_total", type: "counter",
                              help: "HTTP requests answered, by route template and status.", into: &out)
        for (key, n) in s.requests.sorted(by: { ($0.key.route, $0.key.status) < ($1.key.route, $1.key.status) }) {
            out += "registry_http_requests_total{route=\"\(PrometheusText.escape(key.route))\",status=\"\(key.status)\"} \(n)\n"
        }
        PrometheusText.header("registry_http_request_duration_seconds", type: "histogram",
                              help: "Time from complete request to response, by route template.", into: &out)
        for (route, histogram) in s.latency.sorted(by: { $0.key < $1.key }) {
            histogram.render(name: "registry_http_request_duration_seconds",
                             labels: "route=\"\(PrometheusText.escape(route))\"", into: &out)
        }
        PrometheusText.header("registry_commit_batch_commands", type: "histogram",
                              help: "Commands per group-commit batch.", into: &out)
        s.batchSizes.render(name: "registry_commit_batch_commands", labels: "", into: &out)
        PrometheusText.header("registry_commit_duration_seconds", type: "histogram",
                              help: "Time to apply and durably commit one batch.", into: &out)
        s.commitSeconds.render(name: "registry_commit_duration_seconds", labels: "", into: &out)
        PrometheusText.family("registry_commit_failures_total", type: "counter",
                              help: "Batches whose commit failed (nothing in them was acknowledged).",
                              samples: [("", Double(s.failedBatches))], into: &out)
        PrometheusText.family("registry_sweep_runs_total", type: "counter", help: "Sweeps run, by result.",
                              label: "result", samples: ["ok", "error", "interrupted"].map { ($0, Double(s.sweepRuns[$0, default: 0])) },
                              into: &out)
        PrometheusText.family("registry_sweep_removed_total", type: "counter", help: "Records removed by sweeps, by kind.",
                              label: "kind",
                              samples: ["activityTokens", "devices", "pushToStartTokens", "tombstones"]
                                  .map { ($0, Double(s.sweptRecords[$0, default: 0])) }, into: &out)
        PrometheusText.family("registry_sweep_last_duration_seconds", type: "gauge", help: "How long the last sweep took.",
                              samples: [("", s.lastSweepSeconds)], into: &out)
        PrometheusText.header("registry_sweep_step_duration_seconds", type: "histogram",
                              help: "Time one bounded sweep step held the writer.", into: &out)
        s.sweepStepSeconds.render(name: "registry_sweep_step_duration_seconds", labels: "", into: &out)
        PrometheusText.family("registry_feedback_removed_tokens_total", type: "counter",
                              help: "Tokens removed by APNs feedback, by reason.", label: "reason",
                              samples: FeedbackReason.allCases.map { ($0.rawValue, Double(s.feedbackRemoved[$0.rawValue, default: 0])) },
                              into: &out)
        PrometheusText.family("registry_unreadable_tokens_total", type: "counter",
                              help: "Stored tokens left out of a fan-out because their sealed value does not open (damage; registryd check names them).",
                              samples: [("", Double(s.unreadableTokens))], into: &out)
        delivery.render(into: &out)
        PrometheusText.family("registry_store_readable", type: "gauge",
                              help: "1 when this scrape read the store's figures (records, sizes), 0 when the store could not be read.",
                              samples: [("", stats == nil ? 0 : 1)], into: &out)
        if let stats {
            renderStore(stats, into: &out)
        }
        return out
    }

    private func renderStore(_ stats: StoreStats, into out: inout String) {
        PrometheusText.family("registry_records", type: "gauge", help: "Records per database.", label: "database",
                              samples: [("activityTokens", stats.activityTokens), ("devices", stats.devices),
                                        ("pushToStartTokens", stats.pushToStartTokens), ("pushTokens", stats.pushTokens),
                                        ("tombstones", stats.tombstones)].map { ($0.0, Double($0.1)) }, into: &out)
        PrometheusText.family("registry_storage_map_size_bytes", type: "gauge", help: "Bytes the store has reserved: LMDB's map size, PostgreSQL's database size.",
                              samples: [("", Double(stats.reservedBytes))], into: &out)
        PrometheusText.family("registry_storage_used_bytes", type: "gauge", help: "Bytes of those in use (PostgreSQL: the database size).",
                              samples: [("", Double(stats.usedBytes))], into: &out)
        PrometheusText.family("registry_sweep_last_timestamp_seconds", type: "gauge",
                              help: "When the last sweep finished, seconds since the epoch (0: never).",
                              samples: [("", stats.lastSweepAt.map { Double($0.milliseconds) / 1000 } ?? 0)], into: &out)
    }
}
