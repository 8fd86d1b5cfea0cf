import Foundation
import Testing
@testable import HTTPServer

@Suite struct ValueTests {
    @Test func headerLookupIgnoresCaseAndKeepsDuplicatesInOrder() {
        let headers = HTTPHeaders([("X-Thing", "a"), ("content-type", "text/plain"), ("x-thing", "b")])
        #expect(headers["CONTENT-TYPE"] == "text/plain")
        #expect(headers["x-THING"] == "a")
        #expect(headers.values("X-Thing") == ["a", "b"])
        #expect(headers["Missing"] == nil)
        #expect(headers.pairs.map(\.name) == ["X-Thing", "content-type", "x-thing"])
        // Only ASCII letters fold; a name one byte longer or shorter, or with
        // another byte where case would not matter, is another name.
        let tricky = HTTPHeaders([("x-thing-", "c"), ("X_THING", "d"), ("x-th\u{131}ng", "e"), ("@", "f")])
        #expect(tricky["x-thing"] == nil)
        #expect(tricky["x-thing-"] == "c")
        #expect(tricky["x_thing"] == "d")
        #expect(tricky["X-THING"] == nil)
        #expect(tricky["`"] == nil)
    }

    @Test func errorResponseIsContractJSONWithEscapedMessage() throws {
        let response = HTTPResponse.error(status: 400, code: "bad_request", message: "a \"quoted\"\nline\u{1}")
        #expect(response.status == 400)
        #expect(response.headers.first { $0.0 == "Content-Type" }?.1 == "application/json")
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: [String: String]]
        #expect(object?["error"]?["code"] == "bad_request")
        #expect(object?["error"]?["message"] == "a \"quoted\"\nline\u{1}")
        #expect(!response.closeConnection)
    }

    @Test func targetSplitsAtFirstQuestionMarkWithoutDecoding() {
        #expect(HTTPRequest.splitTarget("/a%2Fb?x=1?y") == ("/a%2Fb", "x=1?y"))
        #expect(HTTPRequest.splitTarget("/plain") == ("/plain", nil))
        #expect(HTTPRequest.splitTarget("/empty?") == ("/empty", ""))
    }

    @Test func framingReportsBodyFramingForAcceptedRequests() {
        #expect(accepts([("Content-Length", "5")]) == .length(5))
        #expect(accepts([("Content-Length", "5"), ("content-length", "005")]) == .length(5))
        #expect(accepts([("Content-Length", "0")]) == RequestFraming.Body.none)
        #expect(accepts([]) == RequestFraming.Body.none)
        #expect(accepts([("Transfer-Encoding", "Chunked")]) == .chunked)
    }

    @Test func framingRejectsDisagreeingOrUnknownFraming() {
        #expect(rejection([("Content-Length", "5"), ("Transfer-Encoding", "chunked")]) == 400)
        #expect(rejection([("Content-Length", "5"), ("Content-Length", "6")]) == 400)
        #expect(rejection([("Content-Length", "5, 6")]) == 400)
        #expect(rejection([("Content-Length", "-1")]) == 400)
        #expect(rejection([("Transfer-Encoding", "gzip, chunked")]) == 400)
        #expect(rejection([("Transfer-Encoding", "identity")]) == 400)
    }

    @Test func framingRejectsHeaderBlockOverLimitWith431() {
        let headers = HTTPHeaders([("X-Big", "y")])
        guard case .reject(let response) = RequestFraming.check(headers, headerBytes: 101, maxHeaderBytes: 100) else {
            Issue.record("an oversized header block was accepted")
            return
        }
        #expect(response.status == 431)
        #expect(response.closeConnection)
        #expect(String(decoding: response.body, as: UTF8.self).contains("headers_too_large"))
    }

    /// How the accepted request's body is framed; nil when rejected.
    private func accepts(_ pairs: [(String, String)]) -> RequestFraming.Body? {
        guard case .accept(let body) = RequestFraming.check(HTTPHeaders(pairs), headerBytes: 10,
                                                              maxHeaderBytes: 100) else { return nil }
        return body
    }

    /// The rejection's status, nil when the headers pass; rejections must close.
    private func rejection(_ pairs: [(String, String)]) -> Int? {
        guard case .reject(let response) = RequestFraming.check(HTTPHeaders(pairs), headerBytes: 10,
                                                                 maxHeaderBytes: 100) else { return nil }
        return response.closeConnection ? response.status : -1
    }
}
