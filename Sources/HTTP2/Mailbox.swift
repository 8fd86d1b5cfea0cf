/// What `send` and `stop` hand the client's thread, under the client's lock.
struct Mailbox {
    enum Phase {
        case created
        case running
        /// Requests in flight may finish until `deadline`; then they are aborted.
        case stopping(deadline: ContinuousClock.Instant)
        case stopped
    }

    var phase = Phase.created
    /// Accepted requests the thread has not taken yet.
    var submissions: [Submission] = []
}
