/// How many update tokens one activity holds in one app and environment:
/// what an operator asks of an activity ("will this Live Activity update
/// reach its watchers, and through which APNs host?") without any token
/// leaving the store. Counting opens no sealed value (the environment is
/// kept beside it), so it costs a walk of the activity's entries only.
public struct ActivityTokenCount: Hashable, Sendable {
    public var appId: String
    public var environment: APNsEnvironment
    public var tokens: Int

    public init(appId: String, environment: APNsEnvironment, tokens: Int) {
        self.appId = appId
        self.environment = environment
        self.tokens = tokens
    }

    /// `counts` in the order the reads promise: `appId` bytes, then
    /// environment (production first). Both engines answer through it.
    package static func inOrder(_ counts: [ActivityTokenCount]) -> [ActivityTokenCount] {
        counts.sorted { a, b in
            if a.appId != b.appId { return Array(a.appId.utf8).lexicographicallyPrecedes(Array(b.appId.utf8)) }
            return APNsEnvironment.allCases.firstIndex(of: a.environment)! < APNsEnvironment.allCases.firstIndex(of: b.environment)!
        }
    }
}
