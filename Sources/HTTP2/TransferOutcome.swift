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
/// - notSent, for any other code, when the transfer never reached the point
///   of sending (`CURLINFO_PRETRANSFER_TIME_T` is 0): e.g.
///   `CURLE_OPERATION_TIMEDOUT` (28) while connecting or waiting for the
///   TLS handshake.
/// - uncertain otherwise: `CURLE_OPERATION_TIMEDOUT` (28) after sending,
///   `CURLE_HTTP2_STREAM` (92, the stream reset or the connection closed
///   under it), `CURLE_HTTP2` (16, also a GOAWAY that closed the connection:
///   libcurl does not say whether the stream was above its last stream ID,
///   so one RFC 9113 would let us resend is given up too), `CURLE_GOT_NOTHING` (52),
///   `CURLE_SEND_ERROR` (55), `CURLE_RECV_ERROR` (56), `CURLE_PARTIAL_FILE`
///   (18), and `CURLE_SEND_FAIL_REWIND` (65). libcurl resends a request by
///   itself after a `REFUSED_STREAM` (or a GOAWAY below its stream), which
///   RFC 9113 §8.7 makes safe, but down the same path as after a reused
///   connection that died before any answer byte, which could deliver it
///   twice; it reports neither. So `Transfer` refuses to rewind a body
///   already handed over, and such a request ends as 65, uncertain: a
///   refused stream is then given up rather than risk a duplicate. An OK
///   transfer without a status (never seen) is uncertain too.
enum TransferOutcome: Equatable {
    case answered
    case notSent
    case uncertain

    private static let failuresBeforeSending: Set<UInt32> = [
        CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_RESOLVE_HOST,
        CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
        CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ISSUER_ERROR,
        CURLE_SSL_PINNEDPUBKEYNOTMATCH,
    ].reduce(into: []) { $0.insert($1.rawValue) }

    static func classify(_ code: CURLcode, status: Int, pretransferMicroseconds: Int64) -> TransferOutcome {
        if code == CURLE_OK { return status > 0 ? .answered : .uncertain }
        if failuresBeforeSending.contains(code.rawValue) || pretransferMicroseconds == 0 { return .notSent }
        return .uncertain
    }
}
