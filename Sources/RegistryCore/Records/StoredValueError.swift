/// A stored value this build cannot read: corruption, a value that does not
/// open, or a newer schema. Surfaces as an error (HTTP 500), never a crash.
public struct StoredValueError: Error, Hashable, Sendable, CustomStringConvertible {
    public var what: String
    public var reason: String

    package init(what: String, reason: String) {
        self.what = what
        self.reason = reason
    }

    public var description: String { "stored \(what) is unreadable: \(reason)" }
}
