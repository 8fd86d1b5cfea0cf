import CGlibcExtras
import CCurl
import Foundation
import Lifecycle
import Synchronization

/// libcurl's process-wide setup, done once, before the first handle.
private let curlGlobalInit: CURLcode = curl_global_init(Int(CURL_GLOBAL_ALL))

/// The HTTP/2 client of APNs's provider API: `POST /3/device/{token}` over
/// one long-lived connection per environment (or `connectionsPerHost`),
/// with up to `maxStreamsPerConnection` requests in flight on each.
///
/// One dedicated thread drives libcurl (see `TransferLoop`), so `send`
/// never blocks a caller, and a completion runs on that thread: it must be
/// quick and must not block. Results follow `APNsResult`'s at-most-once
/// kinds; the caller decides what to retry.
public final class APNsClient: Service {
    public let name = "apns-client"
    let configuration: APNsClientConfiguration
    let tokens: ProviderTokens
    let multi: MultiHandle
    let mailbox = Mutex(Mailbox())
    private let finished = DispatchSemaphore(value: 0)

    /// Checks the configuration: both base URLs `https://` with a host, the
    /// CA file readable, positive limits, a libcurl with HTTP/2.
    public init(configuration: APNsClientConfiguration, tokens: ProviderTokens) throws(APNsClientError) {
        guard curlGlobalInit == CURLE_OK else { throw APNsClientError(message: "libcurl failed to initialise") }
        guard let version = registry_curl_version(),
              version.pointee.features & CURL_VERSION_HTTP2 != 0 else {
            throw APNsClientError(message: "this libcurl has no HTTP/2 support, which APNs requires")
        }
        for host in APNsHost.allCases {
            let url = configuration.baseURL(host)
            if let problem = Self.problem(withBaseURL: url) {
                throw APNsClientError(message: "the APNs \(host.rawValue) URL \(url) \(problem)")
            }
        }
        if let caFile = configuration.caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw APNsClientError(message: "cannot read the APNs CA file \(caFile)")
        }
        guard configuration.connectionsPerHost >= 1, configuration.maxStreamsPerConnection >= 1 else {
            throw APNsClientError(message: "connections per host and streams per connection must be at least 1")
        }
        guard configuration.requestTimeout > .zero, configuration.connectTimeout > .zero else {
            throw APNsClientError(message: "the APNs timeouts must be positive")
        }
        self.configuration = configuration
        self.tokens = tokens
        multi = try MultiHandle(configuration: configuration)
    }

    /// Why `url` cannot be a base URL, or `nil`: APNs speaks HTTP/2 over
    /// TLS only, and requests go to `/3/device/…` at the root.
    static func problem(withBaseURL url: String) -> String? {
        guard url.lowercased().hasPrefix("https://") else { return "is not https:// (APNs requires TLS)" }
        let authority = trimmedBaseURL(url).dropFirst("https://".count)
        if authority.isEmpty { return "has no host" }
        if authority.contains(where: { "/?#@".contains($0) || $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 } ?? false }) {
            return "must be https://host[:port] only"
        }
        return nil
    }

    static func trimmedBaseURL(_ url: String) -> String {
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
            if configuration.threadNiceness != 0 { _ = registryd_set_thread_niceness(configuration.threadNiceness) }
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
    public func send(_ request: APNsRequest, completion: @escaping @Sendable (APNsResult) -> Void) {
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
    public func send(_ request: APNsRequest) async -> APNsResult {
        await withCheckedContinuation { continuation in
            send(request) { continuation.resume(returning: $0) }
        }
    }
}
