import APNsTestSupport
import Foundation
import RegistrydTestSupport
import Testing

/// Delivery end to end: a device registered through the device API, a
/// notification through the internal API, its request at the fake APNs,
/// the delivery's state and the metrics that show it.
@Suite(.serialized, .enabled(if: FakeAPNs.available, DeliveryServing.skipReason))
struct ExecutableDeliveryTests {
    @Test func aNotificationTravelsFromTheAPIToAPNs() async throws {
        try await DeliveryServing.withFake { fake in
            let directory = try Registryd.makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let server = try await RegistrydServer(arguments: DeliveryServing.flags(fake), directory: directory)
            defer { if server.process.isRunning { _ = server.stop() } }
            try #require(server.port > 0, "\(server.log)")
            let alice = try await Registryd.mintToken("alice", in: directory)
            let key = try DeliveryServing.apiKey(in: directory)
            let push = DeliveryServing.token(1)
            let registered = try await Registryd.request("POST", server.port, "/v1/devices", bearer: alice,
                                                         body: #"{"deviceId": "D1", "pushToken": "\#(push)"}"#)
            #expect(registered.0 == 201, "\(registered.1)")

            let body = #"{"target": {"userId": "alice"}, "payload": {"aps": {"alert": {"title": "Goal!", "body": "2-1"}}}, "collapseId": "match-42"}"#
            let (status, text) = try await Registryd.request("POST", server.port, "/internal/v1/notifications", bearer: key, body: body)
            #expect(status == 202, "\(text)")
            let id = try #require((DeliveryServing.object(text)["notification"] as? [String: Any])?["id"] as? String)
            let counts = try await DeliveryServing.settled(id, port: server.port, key: key, seconds: 20)
            #expect(counts["delivered"] == 1, "\(counts)")

            let deliveries = try await DeliveryServing.deliveries(id, port: server.port, key: key)
            let delivery = try #require(deliveries.first)
            #expect(delivery["state"] as? String == "delivered")
            #expect(delivery["status"] as? Int == 200)
            #expect(delivery["attempts"] as? Int == 1)
            #expect(delivery["platform"] as? String == "apns")
            #expect(delivery["messageId"] as? String == delivery["apnsId"] as? String)

            try await Task.sleep(for: .milliseconds(200))
            let requests = DeliveryServing.log(fake)
            #expect(requests.count == 1, "\(requests)")
            let request = try #require(requests.first)
            #expect(request["token"] as? String == push)
            #expect(request["status"] as? Int == 200)
            #expect(request["topic"] as? String == FakeAPNs.topic)
            #expect(request["pushType"] as? String == "alert")
            #expect(request["collapseId"] as? String == "match-42")
            #expect(request["apnsId"] as? String == delivery["apnsId"] as? String)

            let answered = try await DeliveryServing.metric("registry_provider_requests_total", [#"provider="apns""#, #"status="200""#], port: server.port, key: key)
            #expect(answered == 1)
            let settled = try await DeliveryServing.metric("registry_deliveries_settled_total", [#"provider="apns""#, #"state="delivered""#],
                                                           port: server.port, key: key)
            #expect(settled == 1)
            #expect(server.stop() == 0)
            #expect(!server.log.contains(push), "no token in the log")
        }
    }
}
