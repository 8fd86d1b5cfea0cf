@testable import HTTP2
import CCurl
import Testing

/// The CURLcode mapping the at-most-once rules rest on.
@Suite struct TransferOutcomeTests {
    @Test func answersNeedAStatus() {
        #expect(TransferOutcome.classify(CURLE_OK, status: 200, pretransferMicroseconds: 5) == .answered)
        #expect(TransferOutcome.classify(CURLE_OK, status: 0, pretransferMicroseconds: 5) == .uncertain)
    }

    @Test func failuresBeforeSendingAreNotSentWhateverTheTiming() {
        for code in [CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR,
                     CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE] {
            #expect(TransferOutcome.classify(code, status: 0, pretransferMicroseconds: 1000) == .notSent, "\(code)")
        }
    }

    @Test func otherFailuresDependOnWhetherSendingBegan() {
        for code in [CURLE_OPERATION_TIMEDOUT, CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_RECV_ERROR, CURLE_SEND_ERROR,
                     CURLE_GOT_NOTHING, CURLE_SEND_FAIL_REWIND, CURLE_PARTIAL_FILE] {
            #expect(TransferOutcome.classify(code, status: 0, pretransferMicroseconds: 0) == .notSent, "\(code)")
            #expect(TransferOutcome.classify(code, status: 0, pretransferMicroseconds: 1) == .uncertain, "\(code)")
        }
    }

    /// A resend libcurl asked for after a failure without a message, and a
    /// `CURLE_HTTP2` without one, are refused streams (`TransferOutcome`).
    @Test func refusedStreamsAreToldApartByTheirSilence() {
        #expect(TransferOutcome.classify(CURLE_SEND_FAIL_REWIND, status: 0, pretransferMicroseconds: 5, refusedResend: true) == .refused)
        #expect(TransferOutcome.classify(CURLE_SEND_FAIL_REWIND, status: 0, pretransferMicroseconds: 5) == .uncertain)
        #expect(TransferOutcome.classify(CURLE_HTTP2, status: 0, pretransferMicroseconds: 5, message: false) == .refused)
        #expect(TransferOutcome.classify(CURLE_HTTP2, status: 0, pretransferMicroseconds: 5, message: true) == .uncertain)
        #expect(TransferOutcome.classify(CURLE_PARTIAL_FILE, status: 0, pretransferMicroseconds: 5, message: false) == .uncertain)
    }
}
