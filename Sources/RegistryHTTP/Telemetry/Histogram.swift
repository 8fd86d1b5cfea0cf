/// Cumulative-bucket histogram state, as Prometheus exposes it.
struct Histogram: Sendable {
    let bounds: [Double]
    private(set) var counts: [UInt64]
    private(set) var sum: Double = 0
    private(set) var count: UInt64 = 0

    init(bounds: [Double]) {
        self.bounds = bounds
        self.counts = Array(repeating: 0, count: bounds.count)
    }

    mutating func observe(_ value: Double) {
        sum += value
        count += 1
        if let index = bounds.firstIndex(where: { value <= $0 }) { counts[index] += 1 }
    }

    /// Lines `name_bucket{…le="…"}`, `name_sum`, `name_count` for `labels` (already rendered, may be empty).
    func render(name: String, labels: String, into out: inout String) {
        var cumulative: UInt64 = 0
        let prefix = labels.isEmpty ? "" : labels + ","
        for (bound, n) in zip(bounds, counts) {
            cumulative += n
            out += "\(name)_bucket{\(prefix)le=\"\(PrometheusText.number(bound))\"} \(cumulative)\n"
        }
        out += "\(name)_bucket{\(prefix)le=\"+Inf\"} \(count)\n"
        let braces = labels.isEmpty ? "" : "{\(labels)}"
        out += "\(name)_sum\(braces) \(PrometheusText.number(sum))\n"
        out += "\(name)_count\(braces) \(count)\n"
    }

    static let latencySeconds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
    static let batchSizes: [Double] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000]
}

/// Prometheus text exposition helpers (format 0.0.4).
enum PrometheusText {
    static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }

    /// A label value with `\`, `"` and newlines escaped.
    static func escape(_ value: String) -> String {
        var out = ""
        for c in value {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }

    static func header(_ name: String, type: String, help: String, into out: inout String) {
        out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    /// A metric with one sample per label value (or one unlabelled sample
    /// when `label` is nil): its header, then `name{label="value"} n` lines.
    static func family(_ name: String, type: String, help: String, label: String? = nil,
                       samples: [(String, Double)], into out: inout String) {
        header(name, type: type, help: help, into: &out)
        for (labelValue, value) in samples {
            let labels = label.map { "{\($0)=\"\(escape(labelValue))\"}" } ?? ""
            out += "\(name)\(labels) \(number(value))\n"
        }
    }
}
