import Codecs
import Foundation
import Glibc
import RegistryCore
import Synchronization

/// A progress line for a long operator command (`export`, `import`,
/// `check`, `sweep`, `backup`): done so far, the rate, and the time left
/// when the total is known. Drawn on stderr only when stderr is a terminal,
/// redrawn at most five times a second (first after 200 ms), and erased at the end, so a script
/// or a log file never sees it and stdout (an export) stays clean.
final class ProgressLine: Sendable {
    enum Unit: Sendable {
        case records
        case entries
        case bytes
    }

    private struct State {
        var done = 0
        var lastDraw: ContinuousClock.Instant?
        var drawn = false
    }

    private let label: String
    private let unit: Unit
    private let total: Int?
    private let started = ContinuousClock.now
    private let isEnabled: Bool
    private let state = Mutex(State())

    /// - Parameter total: what `done` will reach, when known (then the line shows the time left).
    init(_ label: String, unit: Unit, total: Int?, output: Int32 = STDERR_FILENO) {
        self.label = label
        self.unit = unit
        self.total = total.flatMap { $0 > 0 ? $0 : nil }
        isEnabled = isatty(output) == 1
    }

    /// Sets the count done so far; callable from any thread.
    func update(_ done: Int) {
        guard isEnabled else { return }
        let now = ContinuousClock.now
        let line: String? = state.withLock { state in
            state.done = done
            // The first draw waits too: a command done within 200 ms shows no line at all.
            if now - (state.lastDraw ?? started) < .milliseconds(200) { return nil }
            state.lastDraw = now
            state.drawn = true
            return render(done, elapsed: now - started)
        }
        if let line { write("\r\u{1B}[K" + line) }
    }

    /// Adds to the count done so far.
    func advance(by count: Int) {
        guard isEnabled else { return }
        update(state.withLock { $0.done } + count)
    }

    /// Erases the line, so the command's own summary starts on a clean line.
    func finish() {
        guard isEnabled, state.withLock({ $0.drawn }) else { return }
        write("\r\u{1B}[K")
    }

    private func render(_ done: Int, elapsed: Duration) -> String {
        let seconds = max(elapsed.inSeconds, 0.001)
        let rate = Double(done) / seconds
        var line = "\(label): \(format(done))"
        if let total { line += " / \(format(total))" }
        line += unit == .bytes ? "" : " \(unit)"
        line += ", \(format(Int(rate)))/s"
        if let total, rate > 0, done < total {
            line += ", \(Self.clock(Double(total - done) / rate)) left"
        }
        return line
    }

    private func format(_ n: Int) -> String {
        switch unit {
        case .bytes: String(format: "%.1f MiB", Double(n) / 1_048_576)
        case .records, .entries: Self.grouped(n)
        }
    }

    /// `1234567` → `1,234,567`.
    static func grouped(_ n: Int) -> String {
        var digits = String(n.magnitude)
        var groups: [Substring] = []
        while digits.count > 3 {
            groups.insert(Substring(digits.suffix(3)), at: 0)
            digits.removeLast(3)
        }
        groups.insert(Substring(digits), at: 0)
        return (n < 0 ? "-" : "") + groups.joined(separator: ",")
    }

    /// `42s`, `3m05s`, `1h02m`.
    static func clock(_ seconds: Double) -> String {
        let s = Int(seconds.rounded(.up))
        if s < 60 { return "\(s)s" }
        if s < 3600 { return String(format: "%dm%02ds", s / 60, s % 60) }
        return String(format: "%dh%02dm", s / 3600, (s % 3600) / 60)
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}
