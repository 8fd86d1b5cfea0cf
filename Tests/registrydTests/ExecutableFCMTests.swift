import APNsTestSupport
import Foundation
import RegistrydTestSupport
import Testing

/// FCM through the executable: a server configured for FCM alone (no APNs
/// key) reaches Android users registered through the device API, applies
/// FCM's answers to their tokens, and shows the provider in its metrics;
/// `--fcm-*` flags that are wrong stop serve before anything is written.
@Suite(.serialized, .enabled(if: FakeFCM.available, DeliveryServing.skipReason))
struct ExecutableFCMTests {
    static let alive = "fAliveDevice:APA91b" + String(repeating: "a1", count: 70)
    static let dead = "fDeadDevice:APA91b" + String(repeating: "d0", count: 70)

    @Test func anFCMOnlyServerReachesAndroidUsersAndAppliesFCMsAnswers() async throws {
        let script = #"{"tokens": {"\#(Self.dead)": [{"error": "UNREGISTERED"}]}}"#
        try await DeliveryServing.withFakeFCM(script: script) { fake in
            let directory = try Registryd.makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let server = try await RegistrydServer(arguments: DeliveryServing.flags(fake), directory: directory)
            defer { if server.process.isRunning { _ = server.stop() } }
            try #require(server.port > 0, "\(server.log)")
            let key = try DeliveryServing.apiKey(in: directory)
            for (user, token) in [("alice", Self.alive), ("bob", Self.dead)] {
                let jwt = try await Registryd.mintToken(user, in: directory)
                let (status, text) = try await Registryd.request(
                    "POST", server.port, "/v1/devices", bearer: jwt,
                    body: #"{"deviceId": "pixel", "platform": "fcm", "pushToken": "\#(token)"}"#)
                #expect(status == 201, "\(text)")
            }

            let body = #"{"target": {"userIds": ["alice", "bob"]}, "fcm": {"data": {"match": "42"}, "android": {"priority": "high"}}}"#
            let (status, text) = try await Registryd.request("POST", server.port, "/internal/v1/notifications", bearer: key, body: body)
            #expect(status == 202, "\(text)")
            let id = try #require((DeliveryServing.object(text)["notification"] as? [String: Any])?["id"] as? String)
            let counts = try await DeliveryServing.settled(id, port: server.port, key: key, seconds: 20)
            #expect(counts["delivered"] == 1 && counts["failed"] == 1, "\(counts)")

            let deliveries = try await DeliveryServing.deliveries(id, port: server.port, key: key)
            let toAlice = try #require(deliveries.first { $0["userId"] as? String == "alice" })
            #expect(toAlice["state"] as? String == "delivered")
            #expect(toAlice["platform"] as? String == "fcm")
            #expect((toAlice["messageId"] as? String)?.hasPrefix("projects/\(FakeFCM.projectId)/messages/") == true, "\(toAlice)")
            #expect(toAlice["apnsId"] is NSNull)
            let toBob = try #require(deliveries.first { $0["userId"] as? String == "bob" })
            #expect(toBob["state"] as? String == "failed")
            #expect(toBob["reason"] as? String == "Unregistered")
            #expect(toBob["status"] as? Int == 404)

            // Bob's dead token is gone from his device; Alice's stays.
            let (_, bobs) = try await Registryd.request("GET", server.port, "/internal/v1/users/bob/devices", bearer: key)
            #expect(!bobs.contains(Self.dead) && bobs.contains("pixel"), "\(bobs)")
            let (_, alices) = try await Registryd.request("GET", server.port, "/internal/v1/users/alice/devices", bearer: key)
            #expect(alices.contains(Self.alive), "\(alices)")

            // What reached FCM: the caller's members, the token, and a TTL from the expiration.
            try await Task.sleep(for: .milliseconds(200))
            let sent = DeliveryServing.sends(fake)
            #expect(sent.count == 2, "\(sent)")
            let message = try #require(sent.first { $0["token"] as? String == Self.alive }?["message"] as? [String: Any])
            #expect((message["data"] as? [String: String]) == ["match": "42"])
            let android = try #require(message["android"] as? [String: Any])
            #expect(android["priority"] as? String == "high")
            let ttl = try #require(android["ttl"] as? String)
            #expect(ttl.hasSuffix("s") && (3_500...3_600).contains(Int(ttl.dropLast()) ?? 0), "\(ttl)")

            let answered = try await DeliveryServing.metric("registry_provider_requests_total", [#"provider="fcm""#, #"status="200""#],
                                                            port: server.port, key: key)
            #expect(answered == 1)
            let failed = try await DeliveryServing.metric("registry_deliveries_settled_total", [#"provider="fcm""#, #"state="failed""#],
                                                          port: server.port, key: key)
            #expect(failed == 1)
            #expect(server.stop() == 0)
            #expect(!server.log.contains(Self.alive) && !server.log.contains(Self.dead), "no token in the log")
        }
    }

    // MARK: Flags

    /// Every flag but the service account, valid.
    static let rest = ["--fcm-url", "https://127.0.0.1:1", "--listen", "127.0.0.1:0"]

    /// serve with `arguments` in a fresh directory holding `files` (mode
    /// 0600 unless `modes` says otherwise) exits 2 with `expected` in stderr
    /// and writes nothing.
    func refused(_ arguments: [String], saying expected: [String], files: [String: String] = [:],
                 modes: [String: mode_t] = [:]) async throws {
        let directory = try Registryd.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for (name, content) in files {
            try content.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
            chmod(directory + "/" + name, modes[name] ?? 0o600)
        }
        let (status, _, errors) = try await Registryd.run(["serve"] + arguments, in: directory)
        #expect(status == 2, "\(errors)")
        for text in expected { #expect(errors.contains(text), "\(errors)") }
        #expect(!FileManager.default.fileExists(atPath: directory + "/registry-data"),
                "nothing is written before the flags are known to be good")
    }

    @Test func aServiceAccountFileThatIsNotOneIsRefusedByName() async throws {
        let good = try #require(await offThePool { FakeFCM.shared }) + "/service-account.json"
        let account = try String(contentsOfFile: good, encoding: .utf8)
        try await refused(["--fcm-service-account", "default=notjson.json"] + Self.rest,
                          saying: ["--fcm-service-account default=notjson.json", "notjson.json"],
                          files: ["notjson.json": "project_id = registry-test\n"])
        // The key of an EC service account (not Google's RS256).
        let ec = try #require(await offThePool { shell(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]) })
        let ecAccount = try #require(try JSONSerialization.jsonObject(with: Data(account.utf8)) as? [String: Any])
            .merging(["private_key": String(decoding: ec, as: UTF8.self)]) { $1 }
        let ecText = String(decoding: try JSONSerialization.data(withJSONObject: ecAccount), as: UTF8.self)
        try await refused(["--fcm-service-account", "default=ec.json"] + Self.rest,
                          saying: ["ec.json", "not an RSA key"], files: ["ec.json": ecText])
        try await refused(["--fcm-service-account", "default=absent.json"] + Self.rest, saying: ["absent.json", "cannot read"])
        // Readable by group or others: refused with the command that mends it.
        try await refused(["--fcm-service-account", "default=open.json"] + Self.rest,
                          saying: ["open.json", "mode 644", "chmod 600"], files: ["open.json": account], modes: ["open.json": 0o644])
        // A file for an app this registry does not declare.
        try await refused(["--fcm-service-account", "scores=\(good)"] + Self.rest,
                          saying: ["--fcm-service-account", good, "'scores'", "not declared"])
    }

    @Test func anFCMFlagWithoutAServiceAccountOrWithABadValueIsRefused() async throws {
        let good = try #require(await offThePool { FakeFCM.shared }) + "/service-account.json"
        try await refused(["--fcm-url", "https://fcm.example", "--listen", "127.0.0.1:0"], saying: ["--fcm-url needs --fcm-service-account"])
        try await refused(["--fcm-service-account", "default=\(good)", "--fcm-url", "http://127.0.0.1:1", "--listen", "127.0.0.1:0"],
                          saying: ["--fcm-url must be an https:// URL"])
        try await refused(["--fcm-service-account", "default=\(good)", "--fcm-request-timeout", "0s", "--listen", "127.0.0.1:0"],
                          saying: ["--fcm-request-timeout"])
        try await refused(["--fcm-service-account", good, "--listen", "127.0.0.1:0"], saying: ["must be APPID=FILE"])
        try await refused(["--fcm-service-account", "default=\(good)", "--max-queued-deliveries", "0", "--listen", "127.0.0.1:0"],
                          saying: ["--max-queued-deliveries must be a whole number from 1"])
    }

    @Test func helpListsTheFCMFlags() async throws {
        let (status, help, _) = try await Registryd.run(["help", "serve"], in: FileManager.default.currentDirectoryPath)
        #expect(status == 0)
        for (flag, variable) in [("--fcm-service-account APPID=FILE", "REGISTRY_FCM_SERVICE_ACCOUNTS"), ("--fcm-url URL", "REGISTRY_FCM_URL"),
                                 ("--fcm-token-url URL", "REGISTRY_FCM_TOKEN_URL"), ("--fcm-ca-file F", "REGISTRY_FCM_CA_FILE"),
                                 ("--fcm-request-timeout D", "REGISTRY_FCM_REQUEST_TIMEOUT")] {
            #expect(help.contains("\n  \(flag)\n      "), "\(flag) with its summary")
            #expect(help.contains("env: \(variable)\n"), "\(variable)")
        }
    }
}
