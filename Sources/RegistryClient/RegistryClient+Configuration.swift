extension RegistryClient {
    /// How the queue paces itself. The defaults suit an app; tests shorten
    /// them or drive them with a manual clock.
    public struct Configuration: Sendable {
        /// After the first fact of a burst, how long to wait for the rest
        /// before sending. Launch reports a session, a token and a foreground
        /// within milliseconds; this makes them one request.
        public var coalescingWindow: Duration
        /// How long the queue trusts that the server still holds what it
        /// confirmed. After it, an unchanged state is sent again, which keeps
        /// `lastSeenAt` fresh (the server expires devices not seen for its
        /// device TTL, 90 days by default) and recovers a registration the
        /// server lost. Firebase uses 7 days, Airship 24 hours.
        public var refreshInterval: Duration
        public var retryPolicy: RetryPolicy
        /// How long the next session's requests wait for an old session's
        /// delete before going anyway (the delete keeps trying beside them,
        /// with a sequence that cannot undo them). Long enough for a request
        /// of the old session still on the wire to land first.
        public var signOutGrace: Duration
        /// A random number in 0...1 for backoff jitter; replaced in tests.
        var jitter: @Sendable () -> Double = { Double.random(in: 0...1) }

        public init(coalescingWindow: Duration = .milliseconds(250), refreshInterval: Duration = .seconds(86_400),
                    retryPolicy: RetryPolicy = RetryPolicy(), signOutGrace: Duration = .seconds(10)) {
            self.coalescingWindow = coalescingWindow
            self.refreshInterval = refreshInterval
            self.retryPolicy = retryPolicy
            self.signOutGrace = signOutGrace
        }
    }
}
