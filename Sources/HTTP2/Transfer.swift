import CCurl

/// One libcurl easy handle, reused request after request, and the state of
/// the request it carries. Owned by the client's thread alone: libcurl
/// calls its callbacks from `curl_multi_perform` on that thread.
///
/// The body goes through a read callback rather than `CURLOPT_POSTFIELDS`
/// so that the seek callback can refuse to rewind it: libcurl rewinds only
/// to send a request again, and a request whose body was already handed
/// over may have reached the server, unless its stream was refused (see
/// `TransferOutcome`).
///
/// There is no `CURLOPT_TIMEOUT_MS`: libcurl counts it from
/// `curl_multi_add_handle`, including the time a request waits inside
/// libcurl for a free stream, so a request that waited most of it got a
/// few milliseconds once sent ("Operation timed out after 12 milliseconds"
/// with a 30 s timeout). The prerequest callback marks when the stream
/// starts instead, and `TransferLoop` ends a request unanswered
/// `requestTimeout` after that.
final class Transfer {
    let easy: UnsafeMutableRawPointer
    private(set) var submission: Submission?
    /// When the current request's stream was started (libcurl's prerequest
    /// callback), `nil` while it waits for a connection or a stream.
    private(set) var sentAt: ContinuousClock.Instant?
    /// Counts the streams this handle started, request after request (a
    /// request libcurl resends by itself starts another): `TransferLoop`'s
    /// deadlines name the stream they were set for.
    private(set) var streams = 0
    /// libcurl asked to resend the request after a refused stream.
    private var refusedResend = false
    /// Tells `TransferLoop` that a stream started, and whether it is the
    /// request's first (not a resend libcurl made by itself).
    private let started: (Transfer, _ first: Bool) -> Void
    private let configuration: HTTP2ClientConfiguration
    private var authorization = ""
    private var headers: UnsafeMutablePointer<curl_slist>?
    private var payloadOffset = 0
    private var body: [UInt8] = []
    /// The kept response headers of the response being received.
    private var responseHeaders: [String: String] = [:]
    /// libcurl's message for the last failure (`CURLOPT_ERRORBUFFER`).
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))

    /// A handle with the options every request shares; `nil` when libcurl
    /// cannot make one or refuses an option.
    init?(configuration: HTTP2ClientConfiguration, started: @escaping (Transfer, _ first: Bool) -> Void) {
        guard let easy = curl_easy_init() else { return nil }
        self.easy = easy
        self.started = started
        self.configuration = configuration
        errorBuffer.initialize(to: 0)
        guard configure() else {
            curl_easy_cleanup(easy)
            errorBuffer.deallocate()
            return nil
        }
    }

    /// Sets the options every request shares; `false` when libcurl refuses one.
    private func configure() -> Bool {
        let me = Unmanaged.passUnretained(self).toOpaque()
        let timeout = Self.milliseconds(configuration.requestTimeout)
        var results = [
            registry_curl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1),
            registry_curl_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS),
            registry_curl_easy_setopt_long(easy, CURLOPT_PIPEWAIT, 1),
            registry_curl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1),
            registry_curl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2),
            registry_curl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS,
                                           min(timeout, Self.milliseconds(configuration.connectTimeout))),
            registry_curl_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1),
            registry_curl_easy_setopt_long(easy, CURLOPT_TCP_KEEPIDLE, 30),
            registry_curl_easy_setopt_long(easy, CURLOPT_TCP_KEEPINTVL, 10),
            registry_curl_easy_setopt_long(easy, CURLOPT_POST, 1),
            registry_curl_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer),
            registry_curl_easy_setopt_pointer(easy, CURLOPT_PRIVATE, me),
            registry_curl_easy_setopt_write_callback(easy, CURLOPT_WRITEFUNCTION, receiveBody),
            registry_curl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, me),
            registry_curl_easy_setopt_write_callback(easy, CURLOPT_HEADERFUNCTION, receiveHeader),
            registry_curl_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, me),
            registry_curl_easy_setopt_read_callback(easy, CURLOPT_READFUNCTION, readPayload),
            registry_curl_easy_setopt_pointer(easy, CURLOPT_READDATA, me),
            registry_curl_easy_setopt_seek_callback(easy, CURLOPT_SEEKFUNCTION, rewindPayload),
            registry_curl_easy_setopt_pointer(easy, CURLOPT_SEEKDATA, me),
            registry_curl_easy_setopt_prereq_callback(easy, CURLOPT_PREREQFUNCTION, streamStarting),
            registry_curl_easy_setopt_pointer(easy, CURLOPT_PREREQDATA, me),
        ]
        if let maxIdle = configuration.maxIdle {
            results.append(registry_curl_easy_setopt_long(easy, CURLOPT_MAXAGE_CONN, max(1, Int(maxIdle / .seconds(1)))))
        }
        if let caFile = configuration.caFile {
            // An extra CA: CAINFO names it, and CAPATH keeps the system's roots trusted.
            results.append(registry_curl_easy_setopt_pointer(easy, CURLOPT_CAINFO, caFile))
            results.append(registry_curl_easy_setopt_pointer(easy, CURLOPT_CAPATH, "/etc/ssl/certs"))
        }
        results += Self.proxyOptions(easy, configuration)
        return results.allSatisfy { $0 == CURLE_OK }
    }

    deinit {
        curl_slist_free_all(headers)
        curl_easy_cleanup(easy)
        errorBuffer.deallocate()
    }

    /// The proxy options. Without a configured proxy, `CURLOPT_PROXY` ""
    /// turns libcurl's own choice off: it would otherwise take one from
    /// `https_proxy`, `ALL_PROXY` and the like. With one, every request
    /// tunnels through it (CONNECT), `NO_PROXY` cannot exempt a host, and
    /// an `https://` proxy's certificate is verified like the server's,
    /// with the extra CA when there is one.
    private static func proxyOptions(_ easy: UnsafeMutableRawPointer, _ configuration: HTTP2ClientConfiguration) -> [CURLcode] {
        guard let proxy = configuration.proxy else { return [registry_curl_easy_setopt_pointer(easy, CURLOPT_PROXY, "")] }
        var results = [
            registry_curl_easy_setopt_pointer(easy, CURLOPT_PROXY, proxy.url),
            registry_curl_easy_setopt_long(easy, CURLOPT_HTTPPROXYTUNNEL, 1),
            registry_curl_easy_setopt_pointer(easy, CURLOPT_NOPROXY, ""),
            registry_curl_easy_setopt_long(easy, CURLOPT_PROXY_SSL_VERIFYPEER, 1),
            registry_curl_easy_setopt_long(easy, CURLOPT_PROXY_SSL_VERIFYHOST, 2),
        ]
        if let username = proxy.username {
            results.append(registry_curl_easy_setopt_pointer(easy, CURLOPT_PROXYUSERNAME, username))
            results.append(registry_curl_easy_setopt_pointer(easy, CURLOPT_PROXYPASSWORD, proxy.password ?? ""))
        }
        if let caFile = configuration.caFile {
            results.append(registry_curl_easy_setopt_pointer(easy, CURLOPT_PROXY_CAINFO, caFile))
            results.append(registry_curl_easy_setopt_pointer(easy, CURLOPT_PROXY_CAPATH, "/etc/ssl/certs"))
        }
        return results
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        max(1, Int(duration / .milliseconds(1)))
    }

    /// Points the handle at `submission`'s request: its URL, headers and body.
    /// `false` when libcurl refuses one (out of memory).
    ///
    /// The handle is reset first: libcurl 7.88 counts the requests it sent
    /// again by itself ("Connection died, retrying a fresh connect") per
    /// handle and resets that count only in `curl_easy_reset`
    /// (lib/transfer.c `Curl_retry_request`, lib/easy.c), so a handle that
    /// carried five such resends over any number of earlier requests would
    /// give up on the next ("Connection died, tried 5 times before giving
    /// up"), a refused stream included.
    func load(_ submission: Submission) -> Bool {
        curl_easy_reset(easy)
        guard configure() else { return false }
        let request = submission.request
        self.submission = submission
        authorization = request.authorization?() ?? ""
        var lines = request.headers
        if !authorization.isEmpty { lines.append("authorization: \(authorization)") }
        // libcurl's defaults for a POST, which the providers do not want unless a request names them.
        for name in ["Content-Type", "Accept", "Expect"]
        where !request.headers.contains(where: { $0.lowercased().hasPrefix(name.lowercased() + ":") }) {
            lines.append(name + ":")
        }
        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines {
            guard let appended = curl_slist_append(list, line) else {
                curl_slist_free_all(list)
                return false
            }
            list = appended
        }
        headers = list
        errorBuffer[0] = 0
        let method = request.method == "POST"
            ? registry_curl_easy_setopt_pointer(easy, CURLOPT_CUSTOMREQUEST, nil)
            : registry_curl_easy_setopt_pointer(easy, CURLOPT_CUSTOMREQUEST, request.method)
        return method == CURLE_OK
            && registry_curl_easy_setopt_pointer(easy, CURLOPT_URL, request.origin + request.path) == CURLE_OK
            && registry_curl_easy_setopt_pointer(easy, CURLOPT_HTTPHEADER, list) == CURLE_OK
            && registry_curl_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)) == CURLE_OK
    }

    /// The finished request's result, given libcurl's code for it; then the
    /// handle is ready for the next request.
    func finish(_ code: CURLcode) -> (Submission, HTTP2Result)? {
        guard let submission else { return nil }
        var status = 0
        var pretransfer: curl_off_t = 0
        _ = registry_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        _ = registry_curl_easy_getinfo_off_t(easy, CURLINFO_PRETRANSFER_TIME_T, &pretransfer)
        let latency = sentAt.map { (ContinuousClock.now - $0) / .seconds(1) } ?? 0
        let result: HTTP2Result
        switch TransferOutcome.classify(code, status: status, pretransferMicroseconds: Int64(pretransfer),
                                        refusedResend: refusedResend, message: errorBuffer[0] != 0) {
        case .answered:
            result = .answered(HTTP2Response(status: status, headers: responseHeaders, body: body, latency: latency,
                                             authorization: authorization))
        case .notSent: result = .notSent(describe(code))
        case .refused:
            result = .refused("the server refused the stream before processing it (REFUSED_STREAM, or above a GOAWAY's last stream) (curl error \(code.rawValue))")
        case .uncertain: result = .uncertain(describe(code))
        }
        reset()
        return (submission, result)
    }

    /// Ends a request unanswered `timeout` after its stream started (the
    /// caller removed the handle from the multi handle): uncertain.
    func expire(after timeout: Duration) -> (Submission, HTTP2Result)? {
        guard let submission else { return nil }
        reset()
        return (submission, .uncertain("no answer within \(timeout) of sending (the request timeout)"))
    }

    /// Ends the request without a result (the client is stopping, or
    /// loading it failed): whether it may have been written, and the handle
    /// is ready again.
    func abandon() -> (Submission, mayHaveBeenWritten: Bool)? {
        guard let submission else { return nil }
        var pretransfer: curl_off_t = 0
        _ = registry_curl_easy_getinfo_off_t(easy, CURLINFO_PRETRANSFER_TIME_T, &pretransfer)
        reset()
        return (submission, pretransfer != 0)
    }

    private func reset() {
        submission = nil
        sentAt = nil
        refusedResend = false
        curl_slist_free_all(headers)
        headers = nil
        payloadOffset = 0
        body.removeAll(keepingCapacity: true)
        responseHeaders = [:]
        authorization = ""
    }

    private func describe(_ code: CURLcode) -> String {
        let detail = String(cString: errorBuffer)
        let summary = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        return "\(summary) (curl error \(code.rawValue))"
    }

    fileprivate func append(body bytes: UnsafeRawBufferPointer) {
        body.append(contentsOf: bytes.prefix(HTTP2Client.maxResponseBody - body.count))
    }

    /// One header line as libcurl hands it over, `name: value\r\n`; a status
    /// line starts a new response (after a 1xx or a resent request).
    fileprivate func receive(headerLine line: UnsafeRawBufferPointer) {
        if line.starts(with: "HTTP/".utf8) {
            responseHeaders = [:]
            return
        }
        guard let wanted = submission?.request.responseHeaders, !wanted.isEmpty,
              let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        let name = String(decoding: line[..<colon].map { $0 | 0x20 }, as: UTF8.self)
        guard wanted.contains(name) else { return }
        let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var value = line[(colon + 1)...]
        while let first = value.first, isSpace(first) { value = value.dropFirst() }
        while let last = value.last, isSpace(last) { value = value.dropLast() }
        responseHeaders[name] = String(decoding: value, as: UTF8.self)
    }

    fileprivate func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let payload = submission?.request.body else { return 0 }
        let count = min(buffer.count, payload.count - payloadOffset)
        payload.withUnsafeBytes { source in
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[payloadOffset..<(payloadOffset + count)]))
        }
        payloadOffset += count
        return count
    }

    /// Rewinding a body not yet handed over is harmless; any other rewind
    /// is a resend, refused. libcurl asks for one after a refused stream
    /// without a message, after a dead connection with one
    /// (`TransferOutcome`): the empty error buffer marks the refusal.
    fileprivate func rewind() -> Bool {
        if payloadOffset == 0 { return true }
        if errorBuffer[0] == 0 { refusedResend = true }
        return false
    }

    fileprivate func streamStarted() {
        let first = sentAt == nil
        sentAt = ContinuousClock.now
        streams += 1
        started(self, first)
    }
}

private func transfer(_ userdata: UnsafeMutableRawPointer?) -> Transfer {
    Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
}

private let receiveBody: curl_write_callback = { buffer, size, count, userdata in
    let length = size * count
    transfer(userdata).append(body: UnsafeRawBufferPointer(start: buffer, count: length))
    return length
}

private let receiveHeader: curl_write_callback = { buffer, size, count, userdata in
    let length = size * count
    transfer(userdata).receive(headerLine: UnsafeRawBufferPointer(start: buffer, count: length))
    return length
}

private let readPayload: curl_read_callback = { buffer, size, count, userdata in
    transfer(userdata).read(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
}

private let streamStarting: curl_prereq_callback = { userdata, _, _, _, _ in
    transfer(userdata).streamStarted()
    return CURL_PREREQFUNC_OK
}

private let rewindPayload: curl_seek_callback = { userdata, _, _ in
    transfer(userdata).rewind() ? Int32(CURL_SEEKFUNC_OK) : Int32(CURL_SEEKFUNC_FAIL)
}
