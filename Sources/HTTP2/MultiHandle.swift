import CCurl

/// The libcurl multi handle: its connections, and their HTTP/2 streams.
///
/// `@unchecked Sendable` because only the client's thread drives it; other
/// threads call only `wakeup`, which libcurl allows from any thread.
final class MultiHandle: @unchecked Sendable {
    let multi: UnsafeMutableRawPointer

    init(configuration: HTTP2ClientConfiguration) throws(HTTP2ClientError) {
        guard let multi = curl_multi_init() else { throw HTTP2ClientError(message: "libcurl could not make a multi handle") }
        self.multi = multi
        let results = [
            registry_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX),
            registry_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, configuration.connectionsPerHost),
            registry_curl_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, configuration.maxStreamsPerConnection),
        ]
        guard results.allSatisfy({ $0 == CURLM_OK }) else {
            curl_multi_cleanup(multi)
            throw HTTP2ClientError(message: "libcurl refused the multi handle's options (HTTP/2 multiplexing)")
        }
    }

    deinit {
        curl_multi_cleanup(multi)
    }

    /// Ends the thread's `curl_multi_poll` early.
    func wakeup() {
        curl_multi_wakeup(multi)
    }
}
