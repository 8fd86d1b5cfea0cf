import Lifecycle

/// When each started stream's request times out, oldest first. Every stream
/// gets the same timeout, so deadlines arrive in the order streams start and
/// a FIFO keeps them sorted; an entry whose transfer has since finished or
/// started another stream is stale and skipped. A handle reused for the
/// next request keeps its stream count until that request's stream starts,
/// so an entry holds only while the handle's current request was sent:
/// otherwise a request still waiting for a stream would inherit the
/// deadline of the handle's previous one.
struct StreamDeadlines {
    struct Entry {
        let transfer: Transfer
        /// The transfer's `streams` when this one started.
        let stream: Int
        let deadline: ContinuousClock.Instant

        var isCurrent: Bool { transfer.sentAt != nil && transfer.streams == stream }
    }

    private var items = FIFO<Entry>()

    mutating func append(_ transfer: Transfer, deadline: ContinuousClock.Instant) {
        items.append(Entry(transfer: transfer, stream: transfer.streams, deadline: deadline))
    }

    /// The earliest deadline of a stream still waiting for its answer.
    mutating func next() -> ContinuousClock.Instant? {
        while let first = items.first, !first.isCurrent { _ = items.popFirst() }
        return items.first?.deadline
    }

    /// The transfers whose deadline passed by `now`, removed.
    mutating func overdue(at now: ContinuousClock.Instant) -> [Transfer] {
        var due: [Transfer] = []
        while let deadline = next(), deadline <= now, let entry = items.popFirst() {
            due.append(entry.transfer)
        }
        return due
    }
}
