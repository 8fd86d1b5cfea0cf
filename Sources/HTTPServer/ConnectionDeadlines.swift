import Glibc

/// The absolute deadlines a connection must meet, as transitions on its
/// `TrackedConnection`; the `ConnectionReaper` cuts the ones that miss.
///
/// libmicrohttpd's own timeout is idle-based (every byte received resets
/// it), so a client that sends one header line every few seconds would
/// hold its connection for ever. These deadlines do not move with traffic:
///
/// - **head**: the request line and headers are complete within
///   `headerTimeout` of the accept. On a keep-alive connection the next
///   request's head is due `idleTimeout + headerTimeout` after the previous
///   request ended (waiting silently is the idle timeout's business), and
///   within `headerTimeout` of its request line once that has arrived.
/// - **body**: complete within `bodyTimeout` of the end of the head.
/// - none while the handler runs or the response is being sent (the idle
///   timeout covers a client that stops reading).
///
/// A deadline of zero or less in the configuration turns that check off.
/// Times are milliseconds of `CLOCK_MONOTONIC_COARSE` (a few ns to read,
/// a few ms of resolution): this runs several times per request.
struct ConnectionDeadlines: Sendable {
    let head: Int64
    let body: Int64
    let keepAlive: Int64

    init(configuration: HTTPServerConfiguration) {
        head = Self.milliseconds(configuration.headerTimeout)
        body = Self.milliseconds(configuration.bodyTimeout)
        keepAlive = head == 0 ? 0 : head + Int64(configuration.connectionTimeoutSeconds) * 1000
    }

    /// How often the reaper looks: a tenth of the shorter deadline, between
    /// 20 and 250 ms, so a connection is cut at most that late.
    var scanInterval: Duration {
        let shortest: Int64 = [head, body].filter { $0 > 0 }.min() ?? 1000
        return .milliseconds(Swift.min(250, Swift.max(20, shortest / 10)))
    }

    /// STARTED: the head is due from the accept.
    func accepted(_ connection: TrackedConnection) {
        connection.expect(by: Self.due(head))
    }

    /// The request line arrived (URI log callback): the rest of the head is
    /// due within `headerTimeout`, or earlier if already due earlier.
    func requestLineArrived(_ connection: TrackedConnection) {
        guard head > 0 else { return }
        connection.tighten(to: Self.due(head))
    }

    /// The first access-handler call: the head is complete.
    func headComplete(_ connection: TrackedConnection, bodyExpected: Bool) {
        connection.expect(by: bodyExpected ? Self.due(body) : 0)
    }

    /// The body is complete or no more of it is wanted: a handler runs or an
    /// answer is queued.
    func bodyComplete(_ connection: TrackedConnection) {
        connection.expect(by: 0)
    }

    /// NOTIFY_COMPLETED: on a keep-alive connection the next head is due.
    func requestFinished(_ connection: TrackedConnection) {
        connection.expect(by: Self.due(keepAlive))
    }

    /// Milliseconds now on the deadline clock; never 0.
    static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000 + 1
    }

    /// `now() + milliseconds`, or 0 (no deadline) when the check is off.
    private static func due(_ milliseconds: Int64) -> Int64 {
        milliseconds > 0 ? now() + milliseconds : 0
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, duration > .zero else { return 0 }
        return min(seconds, Int64.max / 2000) * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
