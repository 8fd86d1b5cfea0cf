import Foundation
import JSON
import RegistryCore
import Synchronization

/// One JSON line per event on stderr: `{"ts":…,"level":…,"event":…, …}`.
///
/// Callers pass only what is safe to log: ids and counts, never a token (the
/// type has no notion of a token, so the rule is kept at the call sites and
/// pinned by tests that scan log output).
public final class Logger: Sendable {
    public enum Level: Int, Comparable, Sendable, CaseIterable {
        case debug, info, warning, error

        public var name: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .warning: "warning"
            case .error: "error"
            }
        }

        public init?(name: String) {
            guard let level = Level.allCases.first(where: { $0.name == name }) else { return nil }
            self = level
        }

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    public let minimumLevel: Level
    private let sink: @Sendable ([UInt8]) -> Void
    private let lock = Mutex(())

    /// `sink` receives each complete line (with its newline); by default stderr.
    public init(minimumLevel: Level = .info, sink: (@Sendable ([UInt8]) -> Void)? = nil) {
        self.minimumLevel = minimumLevel
        self.sink = sink ?? { line in
            line.withUnsafeBufferPointer { buffer in _ = write(STDERR_FILENO, buffer.baseAddress, buffer.count) }
        }
    }

    public func isEnabled(_ level: Level) -> Bool { level >= minimumLevel }

    public func log(_ level: Level, _ event: String, _ fields: [(String, JSONWriter.Value)] = []) {
        guard isEnabled(level) else { return }
        let now = Timestamp(secondsSince1970: Date().timeIntervalSince1970)
        var members: [(String, JSONWriter.Value)] = [
            ("ts", .string(RFC3339.format(now))), ("level", .string(level.name)), ("event", .string(event)),
        ]
        members.append(contentsOf: fields)
        var line = JSONWriter.encode(.object(members))
        line.append(0x0A)
        lock.withLock { _ in sink(line) }
    }

    public func debug(_ event: String, _ fields: [(String, JSONWriter.Value)] = []) { log(.debug, event, fields) }
    public func info(_ event: String, _ fields: [(String, JSONWriter.Value)] = []) { log(.info, event, fields) }
    public func warning(_ event: String, _ fields: [(String, JSONWriter.Value)] = []) { log(.warning, event, fields) }
    public func error(_ event: String, _ fields: [(String, JSONWriter.Value)] = []) { log(.error, event, fields) }
}
