import Foundation
import Testing
@testable import RegistryHTTP

/// `POST /internal/v1/notifications` refuses every malformed body with a
/// `400 invalid_field` naming the member (docs/api.md "Delivery"), an
/// oversized payload with a `413`, and stores nothing when it refuses.
@Suite struct NotificationBodyCheckTests {
    static let payload = #""payload": {"aps": {"alert": "Goal!"}}"#

    /// A body and the member its refusal must name.
    static let rejected: [(String, String)] = [
        ("{\(payload)}", "target"),
        (#"{"target": "alice", \#(payload)}"#, "target"),
        (#"{"target": [], \#(payload)}"#, "target"),
        (#"{"target": {}, \#(payload)}"#, "target"),
        (#"{"target": {"userId": "alice", "activityId": "m1"}, \#(payload)}"#, "target"),
        (#"{"target": {"userId": "alice", "userIds": ["bob"]}, \#(payload)}"#, "target"),
        (#"{"target": {"userIds": []}, \#(payload)}"#, "target.userIds"),
        (#"{"target": {"userIds": [\#((0...1000).map { "\"u\($0)\"" }.joined(separator: ","))]}, \#(payload)}"#, "target.userIds"),
        (#"{"target": {"userIds": "alice"}, \#(payload)}"#, "target.userIds"),
        (#"{"target": {"userIds": ["alice", 7]}, \#(payload)}"#, "target.userIds[1]"),
        (#"{"target": {"userId": 7}, \#(payload)}"#, "target.userId"),
        (#"{"target": {"activityId": ["m1"]}, \#(payload)}"#, "target.activityId"),
        (#"{"target": {"userId": "alice", "pushToStart": "yes"}, \#(payload)}"#, "target.pushToStart"),
        (#"{"target": {"activityId": "m1", "pushToStart": true}, \#(payload)}"#, "target.pushToStart"),
        (#"{"target": {"activityId": "m1"}, "pushType": "alert", \#(payload)}"#, "pushType"),
        (#"{"target": {"userId": "alice", "pushToStart": true}, "pushType": "background", \#(payload)}"#, "pushType"),
        (#"{"target": {"userId": "alice"}, "pushType": "voip", \#(payload)}"#, "pushType"),
        (#"{"target": {"userId": "alice"}}"#, "payload"),
        (#"{"target": {"userId": "alice"}, "payload": [1]}"#, "payload"),
        (#"{"target": {"userId": "alice"}, "payload": "{}"}"#, "payload"),
        (#"{"target": {"userId": "alice"}, \#(payload), "priority": 7}"#, "priority"),
        (#"{"target": {"userId": "alice"}, \#(payload), "priority": "10"}"#, "priority"),
        (#"{"target": {"userId": "alice"}, \#(payload), "expiration": -1}"#, "expiration"),
        (#"{"target": {"userId": "alice"}, \#(payload), "expiration": 1796300000.5}"#, "expiration"),
        (#"{"target": {"userId": "alice"}, \#(payload), "collapseId": "\#(String(repeating: "c", count: 65))"}"#, "collapseId"),
        (#"{"target": {"userId": "alice"}, \#(payload), "collapseId": "\#(String(repeating: "é", count: 33))"}"#, "collapseId"),
        (#"{"target": {"userId": "alice"}, \#(payload), "idempotencyKey": "\#(String(repeating: "k", count: 65))"}"#, "idempotencyKey"),
        // Printable ASCII only: a control character would be refused by APNs after the 202, or split a log line.
        (#"{"target": {"userId": "alice"}, \#(payload), "collapseId": "match\u000142"}"#, "collapseId"),
        (#"{"target": {"userId": "alice"}, \#(payload), "collapseId": "match\n42"}"#, "collapseId"),
        (#"{"target": {"userId": "alice"}, \#(payload), "collapseId": "match\u007f"}"#, "collapseId"),
        (#"{"target": {"userId": "alice"}, \#(payload), "collapseId": "matché"}"#, "collapseId"),
        (#"{"target": {"userId": "alice"}, \#(payload), "idempotencyKey": "goal\t42"}"#, "idempotencyKey"),
        (#"{"target": {"userId": "alice"}, \#(payload), "idempotencyKey": "goal-42-ü"}"#, "idempotencyKey"),
        (#"{"target": {"userId": "alice"}, "appId": "com.acme.one", \#(payload)}"#, "appId"),
    ]

    @Test(arguments: rejected.indices)
    func refusalNamesTheMemberAndStoresNothing(_ index: Int) async throws {
        let (body, member) = Self.rejected[index]
        try await Harness.with { plain in
            let h = plain.delivering()
            await h.register("d1", user: "alice", #""pushToken": "\#(token(1))""#)
            await h.registerActivityToken(2)
            let reply = await h.notify(body)
            #expect(reply.status == 400, "\(reply.text)")
            #expect(reply.errorCode == "invalid_field")
            #expect(reply.errorMessage.hasPrefix(member + " "), "\(reply.errorMessage)")
            #expect(await queued(h) == 0, "a refused notification queues nothing")
        }
    }

    /// APNs' 4,096 bytes count the payload as sent (re-encoded compactly), not as received.
    @Test func payloadLimitCountsTheCompactEncoding() async throws {
        try await Harness.with { plain in
            let h = plain.delivering()
            await h.register("d1", user: "alice", #""pushToken": "\#(token(1))""#)
            // {"aps":{"alert":"…"}} is 20 bytes around the text.
            let atLimit = String(repeating: "x", count: 4076), overLimit = String(repeating: "x", count: 4077)
            let over = await h.notify(#"{"target": {"userId": "alice"}, "payload": {"aps": {"alert": "\#(overLimit)"}}}"#)
            #expect(over.status == 413, "\(over.text)")
            #expect(over.errorCode == "payload_too_large")
            #expect(await queued(h) == 0)

            let exact = await h.notify(#"{"target": {"userId": "alice"}, "payload": {"aps": {"alert": "\#(atLimit)"}}}"#)
            #expect(exact.status == 202, "\(exact.text)")

            let padding = String(repeating: " \n\t", count: 1500)
            let loose = #"{"target": {"userId": "alice"}, "payload": \#(padding){\#(padding)"aps"\#(padding):\#(padding){"alert": "\#(String(repeating: "y", count: 2000))"}\#(padding)}}"#
            #expect(loose.utf8.count > 4096 * 4)
            let whitespace = await h.notify(loose)
            #expect(whitespace.status == 202, "\(whitespace.text)")
            #expect(await queued(h) == 2)
        }
    }
}
