import APNsTestSupport
import Foundation
import RegistrydTestSupport
import Testing

/// Two `serve --store postgres` nodes on one database send one
/// notification's deliveries together: node A accepts it, node B finds
/// its share by polling the queue, and the claims keep every token to one
/// request. The fake holds every answer for a second and the fan-out is
/// larger than a sender's in-flight limit (4,000), so A cannot claim it
/// all before B's next poll (every 250 ms) however fast A is. Skipped
/// without REGISTRY_TEST_POSTGRES_URL or the fake APNs.
@Suite(.serialized, .enabled(if: TestPostgres.url != nil && FakeAPNs.available, "needs REGISTRY_TEST_POSTGRES_URL and tools/fake-apns"))
struct PostgresDeliveryExecutableTests {
    static let tokens = 6_000

    @Test func twoNodesShareAFanOutAndSendEachTokenOnce() async throws {
        try await TestPostgres.withSchema { url in
            let slow = (0..<Self.tokens).map { #""\#(DeliveryServing.token($0))": [{"status": 200, "delayMs": 1000}]"# }
            try await stopping(try await FakeAPNs.start(script: #"{"tokens": {\#(slow.joined(separator: ", "))}}"#)) { fake in
                try await sendTogether(url, fake)
            }
        }
    }

    func sendTogether(_ url: String, _ fake: FakeAPNs) async throws {
        let directory = try Registryd.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let postgres = ["--store", "postgres", "--postgres-url", url]
        try await DeliveryServing.importActivityTokens(Self.tokens, activity: "m1", in: directory,
                                                       store: postgres + ["--data-dir", "a"])
        let a = try await RegistrydServer(arguments: postgres + ["--data-dir", "a"] + DeliveryServing.flags(fake),
                                          directory: directory)
        defer { if a.process.isRunning { _ = a.stop() } }
        try #require(a.port > 0, "\(a.log)")
        let shared = ["--token-key-file", "a/secrets/token-keys", "--internal-api-key-file", "a/secrets/internal-api.key",
                      "--jwt-hs256-secret-file", "a/secrets/jwt-hs256.secret"]
        let b = try await RegistrydServer(arguments: postgres + ["--data-dir", "b"] + shared + DeliveryServing.flags(fake),
                                          directory: directory)
        defer { if b.process.isRunning { _ = b.stop() } }
        try #require(b.port > 0, "\(b.log)")
        let key = try String(contentsOfFile: directory + "/a/secrets/internal-api.key", encoding: .utf8)
            .trimmingCharacters(in: .newlines)

        let body = #"{"target": {"activityId": "m1"}, "payload": {"aps": {"event": "update"}}}"#
        let (status, text) = try await Registryd.request("POST", a.port, "/internal/v1/notifications", bearer: key, body: body)
        try #require(status == 202, "\(text)")
        let id = try #require((DeliveryServing.object(text)["notification"] as? [String: Any])?["id"] as? String)
        let counts = try await DeliveryServing.settled(id, port: b.port, key: key, seconds: 60)
        #expect(counts["delivered"] == Self.tokens, "\(counts)")

        let sentByA = try await DeliveryServing.metric("registry_provider_requests_total", [#"provider="apns""#, #"status="200""#], port: a.port, key: key)
        let sentByB = try await DeliveryServing.metric("registry_provider_requests_total", [#"provider="apns""#, #"status="200""#], port: b.port, key: key)
        #expect(Int(sentByA + sentByB) == Self.tokens, "A sent \(sentByA), B sent \(sentByB)")
        #expect(sentByA > 0 && sentByB > 0, "both nodes sent: A \(sentByA), B \(sentByB)")
        #expect(a.stop() == 0)
        #expect(b.stop() == 0)

        try await Task.sleep(for: .milliseconds(200))
        var accepted: [String: Int] = [:]
        for request in DeliveryServing.log(fake) where request["status"] as? Int == 200 {
            accepted[request["token"] as? String ?? "", default: 0] += 1
        }
        #expect(accepted.count == Self.tokens)
        #expect(accepted.values.allSatisfy { $0 == 1 }, "a token sent twice")
        print("two-node delivery: node A sent \(Int(sentByA)), node B sent \(Int(sentByB)) of \(Self.tokens)")
    }
}
