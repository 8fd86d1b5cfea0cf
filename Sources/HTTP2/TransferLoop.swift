import CCurl
import Lifecycle

/// The client's thread: it alone drives the multi handle. Each turn takes
/// what `send` queued, starts as many requests as the in-flight cap allows,
/// lets libcurl move every transfer along, completes the finished ones and
/// sleeps in `curl_multi_poll` until a socket is ready, a libcurl timer is
/// due, a request's timeout is or `send`/`stop` wakes it. Requests beyond
/// the cap wait in memory, unsent; easy handles are kept and reused.
///
/// The request timeout is enforced here, counted from when each request's
/// stream starts (`Transfer`): a request that waits for a stream, because
/// the server allows fewer than the cap, loses none of its time waiting.
///
/// Requests wait for a stream here, in order, rather than inside libcurl:
/// only a few are handed to libcurl before their stream can start (four
/// per connection, or an eighth of the streams running, whichever is more,
/// so a host with many streams is kept busy). libcurl's own queue of
/// transfers waiting for a connection is not first come, first served:
/// with thousands in it, a request could wait for the whole fan-out,
/// long enough for its claim to be abandoned while it still went out.
final class TransferLoop {
    /// Requests handed to libcurl whose stream has not started, at least
    /// this many per connection (more while many streams run: `admit`).
    static let waitingPerConnection = 4
    /// The longest sleep in `curl_multi_poll` (libcurl's own timers shorten it).
    private static let pollMilliseconds: Int32 = 1000

    private let client: HTTP2Client
    private let multi: UnsafeMutableRawPointer
    /// Streams in flight per origin: connections × streams per connection.
    private let cap: Int
    /// Requests waiting for a stream, and streams in flight, per origin
    /// (a provider has one origin per host it speaks to: a handful).
    private var queued: [String: FIFO<Submission>] = [:]
    private var inFlight: [String: Int] = [:]
    /// Of those in flight, the ones whose stream has not started yet.
    private var waiting: [String: Int] = [:]
    private let maxWaiting: Int
    /// Streams started during the current turn: more may start at once.
    private var startedThisTurn = 0
    /// Every handle made, so the idle ones and those in flight stay alive.
    private var transfers: [Transfer] = []
    private var idle: [Transfer] = []
    private var taken: [Submission] = []
    private var deadlines = StreamDeadlines()
    private let requestTimeout: Duration

    init(client: HTTP2Client) {
        self.client = client
        multi = client.multi.multi
        let configuration = client.configuration
        cap = configuration.connectionsPerHost * configuration.maxStreamsPerConnection
        maxWaiting = configuration.connectionsPerHost * Self.waitingPerConnection
        requestTimeout = configuration.requestTimeout
    }

    func run() {
        while true {
            let phase = client.mailbox.withLock { mailbox -> Mailbox.Phase in
                swap(&taken, &mailbox.submissions)
                return mailbox.phase
            }
            for submission in taken { queued[submission.request.origin, default: FIFO()].append(submission) }
            taken.removeAll(keepingCapacity: true)
            var deadline: ContinuousClock.Instant?
            if case .stopping(let until) = phase {
                deadline = until
                refuseQueued()
                if inFlight.values.allSatisfy({ $0 == 0 }) || ContinuousClock.now >= until { break }
            }
            startedThisTurn = 0
            admit()
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            let finished = completeFinished()
            let freed = expireOverdue() || finished
            if (freed || startedThisTurn > 0) && queued.values.contains(where: { !$0.isEmpty }) { continue }
            var timeout = Self.pollMilliseconds
            for until in [deadline, deadlines.next()] {
                guard let until else { continue }
                let left = (until - ContinuousClock.now) / .milliseconds(1)
                timeout = Int32(max(1, min(Double(timeout), left.rounded(.up))))
            }
            curl_multi_poll(multi, nil, 0, timeout, nil)
        }
        abortInFlight()
        idle.removeAll()
        transfers.removeAll()
    }

    /// Starts queued requests while each origin has room, and few of its
    /// requests wait inside libcurl for a stream: `maxWaiting`, or an
    /// eighth of its running streams. libcurl serves its waiting transfers
    /// out of order, but a few are each served within one round of answers.
    private func admit() {
        for origin in queued.keys where !queued[origin]!.isEmpty {
            while inFlight[origin, default: 0] < cap,
                  waiting[origin, default: 0] < max(maxWaiting, (inFlight[origin, default: 0] - waiting[origin, default: 0]) / 8),
                  let submission = queued[origin]!.popFirst() {
                start(submission)
            }
        }
    }

    private func start(_ submission: Submission) {
        guard let transfer = idle.popLast() ?? makeTransfer() else {
            submission.completion(.notSent("libcurl could not make a transfer handle"))
            return
        }
        guard transfer.load(submission), curl_multi_add_handle(multi, transfer.easy) == CURLM_OK else {
            _ = transfer.abandon()
            idle.append(transfer)
            submission.completion(.notSent("libcurl refused the request"))
            return
        }
        inFlight[submission.request.origin, default: 0] += 1
        waiting[submission.request.origin, default: 0] += 1
    }

    /// A request leaves libcurl: one fewer in flight, and one fewer waiting if its stream never started.
    private func left(_ origin: String, started: Bool) {
        inFlight[origin, default: 0] -= 1
        if !started { waiting[origin, default: 0] -= 1 }
    }

    private func makeTransfer() -> Transfer? {
        guard let transfer = Transfer(configuration: client.configuration, started: { [unowned self] transfer, first in
            deadlines.append(transfer, deadline: ContinuousClock.now + requestTimeout)
            if first, let origin = transfer.submission?.request.origin {
                waiting[origin, default: 0] -= 1
                startedThisTurn += 1
            }
        }) else { return nil }
        transfers.append(transfer)
        return transfer
    }

    /// Completes every transfer libcurl reports done; whether any finished.
    private func completeFinished() -> Bool {
        var any = false
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            var pointer: UnsafeMutableRawPointer?
            _ = registry_curl_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &pointer)
            curl_multi_remove_handle(multi, easy)
            guard let pointer else { continue }
            let transfer = Unmanaged<Transfer>.fromOpaque(pointer).takeUnretainedValue()
            let started = transfer.sentAt != nil
            guard let (submission, result) = transfer.finish(code) else { continue }
            left(submission.request.origin, started: started)
            idle.append(transfer)
            any = true
            submission.completion(result)
        }
        return any
    }

    /// Ends every request unanswered `requestTimeout` after its stream
    /// started (uncertain: it was sent); whether any ended.
    private func expireOverdue() -> Bool {
        let due = deadlines.overdue(at: ContinuousClock.now)
        for transfer in due {
            curl_multi_remove_handle(multi, transfer.easy)
            let started = transfer.sentAt != nil
            guard let (submission, result) = transfer.expire(after: requestTimeout) else { continue }
            left(submission.request.origin, started: started)
            idle.append(transfer)
            submission.completion(result)
        }
        return !due.isEmpty
    }

    private func refuseQueued() {
        for origin in queued.keys {
            while let submission = queued[origin]!.popFirst() { submission.completion(.notSent("stopping")) }
        }
    }

    /// At the end of the grace period: what was written is uncertain, what
    /// still waited for its connection was never sent.
    private func abortInFlight() {
        for transfer in transfers where transfer.submission != nil {
            curl_multi_remove_handle(multi, transfer.easy)
            let started = transfer.sentAt != nil
            guard let (submission, mayHaveBeenWritten) = transfer.abandon() else { continue }
            left(submission.request.origin, started: started)
            submission.completion(mayHaveBeenWritten ? .uncertain("stopped") : .notSent("stopped before sending"))
        }
    }
}
