/// When each started stream's request times out, oldest first. Every stream
/// gets the same timeout, so deadlines arrive in the order streams start and
/// a FIFO keeps them sorted; an entry whose transfer has since finished or
/// started another stream is stale and skipped.
struct StreamDeadlines {
    struct Entry {
        let transfer: Transfer
        /// The transfer's `streams` when this one started.
        let stream: Int
        let deadline: ContinuousClock.Instant

        var isCurrent: Bool { transfer.submission != nil && transfer.streams == stream }
    }

    private var items: [Entry] = []
    private var head = 0

    mutating func append(_ transfer: Transfer, deadline: ContinuousClock.Instant) {
        items.append(Entry(transfer: transfer, stream: transfer.streams, deadline: deadline))
    }

    /// The earliest deadline of a stream still waiting for its answer.
    mutating func next() -> ContinuousClock.Instant? {
        while head < items.count, !items[head].isCurrent { advance() }
        return head < items.count ? items[head].deadline : nil
    }

    /// The transfers whose deadline passed by `now`, removed.
    mutating func overdue(at now: ContinuousClock.Instant) -> [Transfer] {
        var due: [Transfer] = []
        while let deadline = next(), deadline <= now {
            due.append(items[head].transfer)
            advance()
        }
        return due
    }

    private mutating func advance() {
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
    }
}
