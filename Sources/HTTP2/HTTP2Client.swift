import CCurl
import Foundation
import Lifecycle
import Synchronization

/// An HTTP/2 client over libcurl's multi handle: long-lived connections per
/// origin (`connectionsPerHost`), each with up to `maxStreamsPerConnection`
/// requests in flight. Every delivery provider sends through one of these
/// (one transport, many providers); a provider knows its request shape and
/// its answers, not libcurl.
///
/// One dedicated thread drives libcurl (see `TransferLoop`), so `send`
/// never blocks a caller, and a completion runs on that thread: it must be
/// quick and must not block. Results follow `HTTP2Result`'s at-most-once
/// kinds; the caller decides what to retry.
public final class HTTP2Client: Service {
    /// Answers beyond this size are cut (providers' answers are small JSON).
    public static let maxResponseBody = 16 * 1024

    public let name: String
    let configuration: HTTP2ClientConfiguration
    let multi: MultiHandle
    let mailbox = Mutex(Mailbox())
    private let finished = DispatchSemaphore(value: 0)

    /// Checks the configuration: the CA file readable, positive limits, a
    /// libcurl with HTTP/2.
    public init(configuration: HTTP2ClientConfiguration) throws(HTTP2ClientError) {
        guard curlGlobalInit == CURLE_OK else { throw HTTP2ClientError(message: "libcurl failed to initialise") }
        guard let version = registry_curl_version(),
              version.pointee.features & CURL_VERSION_HTTP2 != 0 else {
            throw HTTP2ClientError(message: "this libcurl has no HTTP/2 support, which \(configuration.name) requires")
        }
        if let caFile = configuration.caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw HTTP2ClientError(message: "cannot read the \(configuration.name) CA file \(caFile)")
        }
        guard configuration.connectionsPerHost >= 1, configuration.maxStreamsPerConnection >= 1 else {
            throw HTTP2ClientError(message: "connections per host and streams per connection must be at least 1")
        }
        guard configuration.requestTimeout > .zero, configuration.connectTimeout > .zero else {
            throw HTTP2ClientError(message: "the \(configuration.name) timeouts must be positive")
        }
        self.configuration = configuration
        name = "\(configuration.name)-client"
        multi = try MultiHandle(configuration: configuration)
    }

    /// Why `url` cannot be an origin, or `nil`: `https://host[:port]` only
    /// (an optional trailing `/`), since requests name their path from the
    /// root and providers speak HTTP/2 over TLS.
    public static func problem(withOrigin url: String) -> String? {
        guard url.lowercased().hasPrefix("https://") else { return "is not https:// (TLS is required)" }
        let authority = trimmedOrigin(url).dropFirst("https://".count)
        if authority.isEmpty { return "has no host" }
        if authority.contains(where: { "/?#@".contains($0) || $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 } ?? false }) {
            return "must be https://host[:port] only"
        }
        return nil
    }

    /// `url` without a trailing `/`.
    public static func trimmedOrigin(_ url: String) -> String {
        url.hasSuffix("/") ? String(url.dropLast()) : url
    }

    /// Starts the thread. Only the first call does anything, and none after `stop`.
    public func start() {
        let first = mailbox.withLock { mailbox -> Bool in
            guard case .created = mailbox.phase else { return false }
            mailbox.phase = .running
            return true
        }
        guard first else { return }
        let thread = Thread { [self] in
            ThreadNiceness.apply(configuration.threadNiceness)
            TransferLoop(client: self).run()
            finished.signal()
        }
        thread.name = name
        thread.start()
    }

    /// `stop(grace:)` with the request timeout as grace: by then every
    /// request in flight has ended on its own.
    public func stop() {
        stop(grace: configuration.requestTimeout)
    }

    /// Stops in order: from now `send` answers `.notSent("stopping")`, and
    /// so do queued requests not yet started; those in flight get until
    /// `grace` to finish, then are aborted (`.uncertain("stopped")`, or
    /// `.notSent` for one still waiting for its connection). Returns once
    /// the thread has ended and every request is completed. Idempotent.
    public func stop(grace: Duration) {
        let (wasRunning, refused) = mailbox.withLock { mailbox -> (Bool, [Submission]) in
            switch mailbox.phase {
            case .created:
                mailbox.phase = .stopped
                return (false, [])
            case .running:
                mailbox.phase = .stopping(deadline: ContinuousClock.now + grace)
                defer { mailbox.submissions = [] }
                return (true, mailbox.submissions)
            case .stopping, .stopped:
                return (false, [])
            }
        }
        guard wasRunning else { return }
        for submission in refused { submission.completion(.notSent("stopping")) }
        multi.wakeup()
        finished.wait()
        mailbox.withLock { $0.phase = .stopped }
    }

    /// Queues `request`; `completion` runs once, on the client's thread
    /// (or here, at once, for a request refused before it is queued).
    public func send(_ request: HTTP2Request, completion: @escaping @Sendable (HTTP2Result) -> Void) {
        if let invalidity = request.invalidity {
            completion(.notSent("invalid request: \(invalidity)"))
            return
        }
        enum Admission { case queued(wake: Bool), refused(String) }
        let admission = mailbox.withLock { mailbox -> Admission in
            switch mailbox.phase {
            case .created: return .refused("not started")
            case .stopping, .stopped: return .refused("stopping")
            case .running:
                // The thread takes the whole mailbox at once: only the first request since then wakes it.
                let wake = mailbox.submissions.isEmpty
                mailbox.submissions.append(Submission(request: request, completion: completion))
                return .queued(wake: wake)
            }
        }
        switch admission {
        case .queued(let wake): if wake { multi.wakeup() }
        case .refused(let reason): completion(.notSent(reason))
        }
    }

    /// `send`, awaiting the result.
    public func send(_ request: HTTP2Request) async -> HTTP2Result {
        await withCheckedContinuation { continuation in
            send(request) { continuation.resume(returning: $0) }
        }
    }
}
