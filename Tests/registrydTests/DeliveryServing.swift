import APNsTestSupport
import Foundation
import RegistrydTestSupport
import Testing

/// What the delivery tests of the executable share: `serve`'s `--apns-*`
/// and `--fcm-*` flags pointed at a running `tools/fake-apns` or
/// `tools/fake-fcm`, the notification routes read as JSON, the fakes'
/// request logs, and `/metrics` samples.
enum DeliveryServing {
    static let skipReason: Comment = "tools/fake-apns needs /usr/bin/python3 with h2 and cryptography (tools/install-deps --tools)"

    /// The delivery flags of a server that sends to `fake` (and trusts its CA).
    static func flags(_ fake: FakeAPNs, timeout: String = "10s") -> [String] {
        ["--apns-key-file", FakeAPNs.shared! + "/apns-key.p8", "--apns-key-id", FakeAPNs.keyId,
         "--apns-team-id", FakeAPNs.teamId, "--apns-topic", "default=\(FakeAPNs.topic)",
         "--apns-production-url", "https://127.0.0.1:\(fake.productionPort)",
         "--apns-sandbox-url", "https://127.0.0.1:\(fake.sandboxPort)",
         "--apns-ca-file", fake.caFile, "--apns-request-timeout", timeout]
    }

    /// The delivery flags of a server that sends to `fake` through FCM only
    /// (the service account of app `default`, the fake's CA trusted).
    static func flags(_ fake: FakeFCM, timeout: String = "10s") -> [String] {
        ["--fcm-service-account", "default=\(fake.serviceAccountFile)", "--fcm-url", fake.baseURL,
         "--fcm-token-url", fake.tokenURL, "--fcm-ca-file", fake.caFile, "--fcm-request-timeout", timeout]
    }

    /// Runs `body` with a fake FCM playing `script`, stopped afterwards, also when `body` throws.
    static func withFakeFCM(script: String = "{}", _ body: (FakeFCM) async throws -> Void) async throws {
        try await stopping(try await FakeFCM.start(script: script), body)
    }

    /// Runs `body` with a fake APNs that answers 200 to everything, and
    /// stops the fake afterwards, also when `body` throws.
    static func withFake(_ body: (FakeAPNs) async throws -> Void) async throws {
        try await stopping(try await FakeAPNs.start(script: #"{"tokens": {}}"#), body)
    }

    /// The internal API key serve generated in `directory`'s data directory.
    static func apiKey(in directory: String) throws -> String {
        try String(contentsOfFile: directory + "/registry-data/secrets/internal-api.key", encoding: .utf8)
            .trimmingCharacters(in: .newlines)
    }

    static func object(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    /// A notification view's `counts`, by state.
    static func counts(_ document: [String: Any]) -> [String: Int] {
        (document["notification"] as? [String: Any])?["counts"] as? [String: Int] ?? [:]
    }

    /// Polls `GET /internal/v1/notifications/{id}` (every 100 ms, up to
    /// `seconds`) until it is resolved and none of its deliveries is queued
    /// or sending; its last counts.
    static func settled(_ id: String, port: Int, key: String, seconds: Double) async throws -> [String: Int] {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let (status, text) = try await Registryd.request("GET", port, "/internal/v1/notifications/\(id)?limit=1", bearer: key)
            let counts = counts(object(text))
            let resolving = (object(text)["notification"] as? [String: Any])?["resolving"] as? Bool ?? true
            if status == 200, !resolving, counts["queued"] == 0, counts["sending"] == 0 { return counts }
            guard Date() < deadline else {
                throw Registryd.Failure(description: "notification \(id) not settled after \(seconds) s: \(status) \(text)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Every delivery of notification `id`, walked page by page.
    static func deliveries(_ id: String, port: Int, key: String) async throws -> [[String: Any]] {
        var all: [[String: Any]] = []
        var cursor: String?
        repeat {
            let query = "limit=1000" + (cursor.map { "&cursor=\($0)" } ?? "")
            let (status, text) = try await Registryd.request("GET", port, "/internal/v1/notifications/\(id)?\(query)", bearer: key)
            guard status == 200 else { throw Registryd.Failure(description: "GET deliveries: \(status) \(text)") }
            let page = object(text)
            all += page["deliveries"] as? [[String: Any]] ?? []
            cursor = page["nextCursor"] as? String
        } while cursor != nil
        return all
    }

    /// The fake's request log as it is on disk now (it flushes every 50 ms).
    static func log(_ fake: FakeAPNs) -> [[String: Any]] { log(file: fake.logFile) }

    /// The fake FCM's `messages:send` records as they are on disk now (it flushes every 50 ms).
    static func sends(_ fake: FakeFCM) -> [[String: Any]] {
        log(file: fake.logFile).filter { $0["endpoint"] as? String == "send" }
    }

    private static func log(file: String) -> [[String: Any]] {
        let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { object(String($0)) }.filter { !$0.isEmpty }
    }

    /// The sum of `/metrics` samples of `name` whose labels contain every one of `labels` (`status="200"`).
    static func metric(_ name: String, _ labels: [String] = [], port: Int, key: String) async throws -> Double {
        let (_, text) = try await Registryd.request("GET", port, "/metrics", bearer: key)
        var sum = 0.0
        for line in text.split(separator: "\n") where line.hasPrefix(name + "{") || line.hasPrefix(name + " ") {
            guard labels.allSatisfy({ line.contains($0) }), let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { continue }
            sum += value
        }
        return sum
    }

    /// Registers `count` activity tokens of `activity` (user `u<i>`, device
    /// `d<i>`, token `token(i)`) by `registryd import` into `directory`'s
    /// data directory, before any server runs there: the quickest way to
    /// a large fan-out.
    static func importActivityTokens(_ count: Int, activity: String, in directory: String, store: [String] = []) async throws {
        try await importRecords(count, in: directory, store: store) { i in
            (platform: "apns", pushToken: nil, activityTokens: #"[{"activityId":"\#(activity)","token":"\#(token(i))","#
                + #""environment":"production","updatedAt":\#(Self.now)}]"#)
        }
    }

    /// Registers `count` Android devices (user `u<i>`, device `d<i>`, FCM
    /// push token `fcmToken(i)`) by `registryd import`, as `importActivityTokens` does.
    static func importFCMTokens(_ count: Int, in directory: String) async throws {
        try await importRecords(count, in: directory, store: []) { i in
            (platform: "fcm", pushToken: #"{"token":"\#(fcmToken(i))","environment":"production","updatedAt":\#(Self.now)}"#,
             activityTokens: "[]")
        }
    }

    private static var now: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// `registryd import` of `count` export lines whose device parts `record(i)` gives.
    private static func importRecords(_ count: Int, in directory: String, store: [String],
                                      _ record: (Int) -> (platform: String, pushToken: String?, activityTokens: String)) async throws {
        let now = Self.now
        var lines = ""
        lines.reserveCapacity(count * 400)
        for i in 0..<count {
            let parts = record(i)
            lines += #"{"device":{"userId":"u\#(i)","deviceId":"d\#(i)","platform":"\#(parts.platform)","environment":"production","#
                + #""osVersion":null,"appVersion":null,"createdAt":\#(now),"lastSeenAt":\#(now),"sequence":null,"#
                + #""pushToken":\#(parts.pushToken ?? "null"),"pushToStartToken":null,"activityTokens":\#(parts.activityTokens)}}"# + "\n"
        }
        let file = directory + "/records.jsonl"
        try lines.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let (status, _, errors) = try await Registryd.run(["import", "--from", file] + store, in: directory)
        guard status == 0 else { throw Registryd.Failure(description: "registryd import: \(errors)") }
    }

    /// A 32-byte APNs token for index `i`, distinct for every `i` below 2^32.
    static func token(_ i: Int) -> String {
        String(repeating: String(format: "%08x", i), count: 8)
    }

    /// An FCM registration token for index `i` (FCM's shape: an instance id, a colon, 140 characters).
    static func fcmToken(_ i: Int) -> String {
        String(format: "f%010d:APA91b", i) + String(repeating: String(format: "%08x", i), count: 17)
    }
}
