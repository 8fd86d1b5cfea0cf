import CCurl

/// How a finished libcurl transfer maps to an `HTTP2Result`'s kind. The
/// delivery rules are at-most-once, so only what certainly was never
/// written is `notSent`; everything else without an answer is `uncertain`.
///
/// - `CURLE_OK` with an HTTP status: answered.
/// - notSent, whatever the timing, because each fails before a request can
///   be written: `CURLE_UNSUPPORTED_PROTOCOL` (1), `CURLE_URL_MALFORMAT`
///   (3), `CURLE_COULDNT_RESOLVE_PROXY` (5), `CURLE_COULDNT_RESOLVE_HOST`
///   (6), `CURLE_COULDNT_CONNECT` (7), `CURLE_SSL_CONNECT_ERROR` (35, a
///   failed TLS handshake), `CURLE_SSL_CERTPROBLEM` (58),
///   `CURLE_SSL_CIPHER` (59), `CURLE_PEER_FAILED_VERIFICATION` (60),
///   `CURLE_SSL_CACERT_BADFILE` (77), `CURLE_SSL_CRL_BADFILE` (82),
///   `CURLE_SSL_ISSUER_ERROR` (83), `CURLE_SSL_PINNEDPUBKEYNOTMATCH` (90).
///   A stream refused before the body was handed to libcurl is sent again
///   by libcurl on a fresh connection, and the outcome is the new attempt's.
/// - refused: a stream the server refused before processing it (RFC 9113
///   §8.7), told apart as below.
/// - notSent, for any other code, when the transfer never reached the point
///   of sending (`CURLINFO_PRETRANSFER_TIME_T` is 0): e.g. a connect
///   timeout.
/// - uncertain otherwise: the request timeout after sending (the client's
///   own, see `TransferLoop`), `CURLE_HTTP2_STREAM` (92, the stream reset
///   or the connection closed under it), `CURLE_HTTP2` (16) with a message,
///   `CURLE_GOT_NOTHING` (52), `CURLE_SEND_ERROR` (55), `CURLE_RECV_ERROR`
///   (56), `CURLE_PARTIAL_FILE` (18), and `CURLE_SEND_FAIL_REWIND` (65)
///   when the resend was not a refused stream's. An OK transfer without a
///   status (never seen) is uncertain too.
///
/// How libcurl 7.88 (lib/http2.c, lib/transfer.c, lib/multi.c) reports a
/// refused stream. nghttp2 closes a stream the server reset with
/// `REFUSED_STREAM`, and every stream above a `GOAWAY`'s last stream id,
/// with the error code `REFUSED_STREAM`. Then either:
/// - the connection still has streams to serve: `http2_handle_stream_close`
///   sets `state.refused_stream` and returns `CURLE_RECV_ERROR` without a
///   message, and `Curl_retry_request` resends the request on a fresh
///   connection, rewinding the body through the seek callback. The other
///   path into that resend, a reused connection that died before any answer
///   byte (which may have processed the request), always leaves a message
///   first (`Recv failure: …`, `OpenSSL SSL_read: …`, `Failed receiving
///   HTTP2 data`; `Curl_failf` writes the first one of a transfer into
///   `CURLOPT_ERRORBUFFER`, which `curl_multi_add_handle` clears). So
///   `Transfer` refuses every rewind of a body already handed over, and
///   counts the request refused when the error buffer was still empty then;
/// - the stream was the connection's last (the `GOAWAY` left nothing else to
///   do): `h2_process_pending_input` ends it with `CURLE_HTTP2` (16), again
///   without a message; a refusal is the way into that branch (no
///   `RST_STREAM` received, a stream error recorded, the session over). The
///   one other way is a stream error nghttp2 itself detected in the answer
///   (a malformed response) in the instant a `GOAWAY` left the connection
///   idle; APNs' and FCM's answers are well-formed, so 16 without a message
///   counts as refused.
enum TransferOutcome: Equatable {
    case answered
    case notSent
    case refused
    case uncertain

    private static let failuresBeforeSending: Set<UInt32> = [
        CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_RESOLVE_HOST,
        CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
        CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ISSUER_ERROR,
        CURLE_SSL_PINNEDPUBKEYNOTMATCH,
    ].reduce(into: []) { $0.insert($1.rawValue) }

    /// - Parameters:
    ///   - refusedResend: libcurl asked to resend the request after a
    ///     failure that left no message (see above).
    ///   - message: whether libcurl wrote a message for this transfer.
    static func classify(_ code: CURLcode, status: Int, pretransferMicroseconds: Int64, refusedResend: Bool = false,
                         message: Bool = true) -> TransferOutcome {
        if code == CURLE_OK { return status > 0 ? .answered : .uncertain }
        if refusedResend || (code == CURLE_HTTP2 && !message) { return .refused }
        if failuresBeforeSending.contains(code.rawValue) || pretransferMicroseconds == 0 { return .notSent }
        return .uncertain
    }
}
