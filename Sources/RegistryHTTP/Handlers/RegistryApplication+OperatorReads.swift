import HTTPServer
import JSON
import RegistryCore

/// The internal reads an operator (and the console) asks that the sender's
/// reads do not answer, each a count the store makes (docs/api.md
/// "Operator reads"): no response carries a token, and none makes the
/// caller add up thousands of rows.
extension RegistryApplication {
    /// `GET /internal/v1/activities/{activityId}/token-counts`: how many
    /// update tokens the activity holds, in all and per app, by environment.
    func activityTokenCounts(_ call: Call, _ reads: any RegistryReads) throws -> HTTPResponse {
        let activityId = try call.parameter(FieldCheck.activityId)
        let counts = try reads.activityTokenCounts(activityId: activityId)
        var apps: [String] = []
        for count in counts where apps.last != count.appId { apps.append(count.appId) }
        return Self.json(200, capacity: 128 + apps.count * 96) { w in
            w.beginObject()
            w.member("activityId", activityId)
            Self.environmentCounts(counts, into: &w)
            w.key("apps")
            w.beginArray()
            for app in apps {
                w.beginObject()
                w.member("appId", app)
                Self.environmentCounts(counts.filter { $0.appId == app }, into: &w)
                w.endObject()
            }
            w.endArray()
            w.endObject()
        }
    }

    /// `"tokens": N, "environments": {"production": N, "sandbox": N}` of `counts`.
    private static func environmentCounts(_ counts: [ActivityTokenCount], into w: inout JSONWriter) {
        w.member("tokens", Int64(counts.reduce(0) { $0 + $1.tokens }))
        w.key("environments")
        w.beginObject()
        for environment in APNsEnvironment.allCases {
            w.key(environment.rawValue)
            w.int(Int64(counts.filter { $0.environment == environment }.reduce(0) { $0 + $1.tokens }))
        }
        w.endObject()
    }

    /// `GET /internal/v1/removals?bucket=hour|day&buckets=N`: the removals
    /// of the last N whole hours or days (UTC, the current one included),
    /// every bucket listed oldest first, zeros included, so a chart needs
    /// no gap filling.
    func removals(_ call: Call, _ reads: any RegistryReads) throws -> HTTPResponse {
        let window = try RemovalWindow(QueryParameters(call.request.query), now: now)
        let series = window.series(try reads.removalCounts(from: window.from, to: window.to, bucket: window.width))
        return Self.json(200, capacity: 256 + series.count * 320) { w in
            w.beginObject()
            w.member("bucket", window.bucket.rawValue)
            w.member("from", window.from)
            w.member("to", window.to)
            w.key("totals")
            RemovalWindow.Tally(summing: series.map(\.tally)).write(into: &w)
            w.key("series")
            w.beginArray()
            for point in series {
                w.beginObject()
                w.member("start", point.start)
                point.tally.writeMembers(into: &w)
                w.endObject()
            }
            w.endArray()
            w.endObject()
        }
    }
}
