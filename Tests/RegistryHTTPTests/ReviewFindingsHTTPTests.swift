import HTTPServer
import JSON
import RegistryCore
import Testing
@testable import RegistryHTTP

/// Defects a review found in the HTTP layer, each pinned here before it was fixed.
@Suite struct ReviewFindingsHTTPTests {
    @Test func aBodyThatIsNotJSONIsReportedBeforeABadPathSegment() async throws {
        try await Harness.with { h in
            let reply = await h.send("POST", "/v1/activities/%ZZ/activity-token", body: "not json")
            #expect(reply.status == 400)
            #expect(reply.errorCode == "invalid_json")
        }
    }

    @Test func aBadPathSegmentIsStillNamedWhenTheBodyIsJSON() async throws {
        try await Harness.with { h in
            let reply = await h.send("POST", "/v1/activities/%ZZ/activity-token",
                                     body: #"{"deviceId": "d1", "token": "\#(token(1))"}"#)
            #expect(reply.errorCode == "invalid_field")
            #expect(reply.errorMessage.hasPrefix("activityId"))
        }
    }

    @Test func unavailableAnswersCarryNoInternals() {
        let response = APIError(RegistryError.unavailable(reason: "commit failed: Input/output error")).response
        let text = String(decoding: response.body, as: UTF8.self)
        #expect(response.status == 503)
        #expect(!text.contains("Input/output"))
        #expect(!text.contains("commit failed"))
    }

    @Test func everyUnavailableAnswerGivesTheSameRetryAfter() {
        let storage = APIError(RegistryError.storageFull).response
        let unusable = APIError(RegistryError.unavailable(reason: "x")).response
        let retry = { (r: HTTPResponse) in r.headers.first { $0.0 == "Retry-After" }?.1 }
        #expect(retry(storage) == HTTPResponse.retryAfterSeconds)
        #expect(retry(unusable) == HTTPResponse.retryAfterSeconds)
    }

    @Test func versionsAreCountedInBytes() async throws {
        try await Harness.with { h in
            let marks = String(repeating: "\\u0301", count: 40)
            let reply = await h.register("d1", #""osVersion": "e\#(marks)""#)
            #expect(reply.status == 400)
            #expect(reply.errorMessage.hasPrefix("osVersion"))
            #expect(await h.register("d1", #""appVersion": "\#(String(repeating: "é", count: 16))""#).status == 201)
        }
    }

    @Test func aLookupKeepsCanonicallyEquivalentUsersApart() async throws {
        try await Harness.with { h in
            await h.register("d1", user: "caf\u{E9}", #""pushToken": "\#(token(1))""#)
            await h.register("d2", user: "cafe\u{301}", #""pushToken": "\#(token(2))""#)
            let reply = await h.send("POST", "/internal/v1/users/lookup",
                                     body: #"{"userIds": ["caf\u00e9", "cafe\u0301"]}"#, as: .apiKey)
            #expect(reply.status == 200)
            // Compared as bytes: `String` and `JSONObject` would merge the two ids.
            for (user, pushToken) in [("caf\u{E9}", token(1)), ("cafe\u{301}", token(2))] {
                let member = Array("\"\(user)\":[{".utf8)
                guard let start = reply.body.firstRange(of: member)?.upperBound else {
                    Issue.record("no member for \(Array(user.utf8)) in \(reply.text)")
                    continue
                }
                let rest = reply.body[start...]
                let end = rest.firstRange(of: Array("]".utf8))?.lowerBound ?? rest.endIndex
                #expect(rest[..<end].firstRange(of: Array(pushToken.utf8)) != nil)
            }
        }
    }
}
