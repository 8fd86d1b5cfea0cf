import APNsTestSupport
import Foundation
import RegistrydTestSupport
import Testing

/// Where provider connections go: straight to APNs and FCM whatever proxy
/// variables the environment holds, through `--delivery-proxy` when one is
/// named (for every provider connection: APNs, FCM and FCM's token
/// endpoint), and never with TLS secrets written to `SSLKEYLOGFILE`.
@Suite(.serialized, .enabled(if: FakeFCM.available, DeliveryServing.skipReason))
struct ExecutableEgressTests {
    static let fcmToken = "fProxyDevice:APA91b" + String(repeating: "b2", count: 70)

    /// A server with both providers pointed at the fakes (plus `flags`, in
    /// `environment`) delivers one notification to an iPhone and a Pixel;
    /// returns the server's log once it stopped.
    static func deliverThroughBoth(_ apns: FakeAPNs, _ fcm: FakeFCM, flags: [String] = [],
                                   environment: [String: String] = [:], in directory: String) async throws -> String {
        let arguments = DeliveryServing.flags(apns) + DeliveryServing.flags(fcm) + flags
        let server = try await RegistrydServer(arguments: arguments, directory: directory, environment: environment)
        defer { if server.process.isRunning { _ = server.stop() } }
        try #require(server.port > 0, "\(server.log)")
        let key = try DeliveryServing.apiKey(in: directory)
        let jwt = try await Registryd.mintToken("alice", in: directory)
        for body in [#"{"deviceId": "iphone", "pushToken": "\#(DeliveryServing.token(7))"}"#,
                     #"{"deviceId": "pixel", "platform": "fcm", "pushToken": "\#(Self.fcmToken)"}"#] {
            let (status, text) = try await Registryd.request("POST", server.port, "/v1/devices", bearer: jwt, body: body)
            #expect(status == 201, "\(text)")
        }
        let body = #"{"target": {"userId": "alice"}, "payload": {"aps": {"alert": "hi"}}, "fcm": {"data": {"match": "42"}}}"#
        let (status, text) = try await Registryd.request("POST", server.port, "/internal/v1/notifications", bearer: key, body: body)
        #expect(status == 202, "\(text)")
        let id = try #require((DeliveryServing.object(text)["notification"] as? [String: Any])?["id"] as? String)
        let counts = try await DeliveryServing.settled(id, port: server.port, key: key, seconds: 20)
        #expect(counts["delivered"] == 2, "\(counts): \(server.log)")
        #expect(server.stop() == 0)
        return server.log
    }

    /// Runs `body` with a fake APNs, a fake FCM and a CONNECT proxy, all stopped afterwards.
    static func withFakesAndProxy(credentials: (user: String, password: String)? = nil, tls: Bool = false,
                                  _ body: (FakeAPNs, FakeFCM, ConnectProxy) async throws -> Void) async throws {
        try await DeliveryServing.withFake { apns in
            try await DeliveryServing.withFakeFCM { fcm in
                try await stopping(try await ConnectProxy.start(credentials: credentials, tls: tls)) { proxy in
                    try await body(apns, fcm, proxy)
                }
            }
        }
    }

    /// The proxy variables libcurl reads for an https:// URL (each spelling it knows).
    @Test(arguments: [["https_proxy", "HTTPS_PROXY"], ["ALL_PROXY", "all_proxy"]])
    func proxyVariablesAreIgnored(_ variables: [String]) async throws {
        try await Self.withFakesAndProxy { apns, fcm, proxy in
            let directory = try Registryd.makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var environment = Dictionary(uniqueKeysWithValues: variables.map { ($0, proxy.url()) })
            environment["http_proxy"] = proxy.url()
            _ = try await Self.deliverThroughBoth(apns, fcm, environment: environment, in: directory)
            #expect(proxy.requests.isEmpty, "\(proxy.requests)")
            #expect(DeliveryServing.log(apns).count == 1)
            #expect(DeliveryServing.sends(fcm).count == 1)
        }
    }

    @Test func sslKeyLogFileIsNeverWritten() async throws {
        try await DeliveryServing.withFake { apns in
            try await DeliveryServing.withFakeFCM { fcm in
                let directory = try Registryd.makeDirectory()
                defer { try? FileManager.default.removeItem(atPath: directory) }
                let keyLog = directory + "/tls-keys.log"
                _ = try await Self.deliverThroughBoth(apns, fcm, environment: ["SSLKEYLOGFILE": keyLog], in: directory)
                #expect(!FileManager.default.fileExists(atPath: keyLog), "TLS secrets were written to SSLKEYLOGFILE")
            }
        }
    }

    /// Every provider connection goes through `--delivery-proxy`: the
    /// proxy sees a CONNECT to APNs' host and to FCM's (which serves its
    /// token endpoint too), with the credentials; NO_PROXY and the proxy
    /// variables change nothing, and the password is never logged.
    @Test func everyProviderConnectionGoesThroughTheDeliveryProxy() async throws {
        let password = "s3cr:t@pw"
        try await Self.withFakesAndProxy(credentials: ("relay", password)) { apns, fcm, proxy in
            let directory = try Registryd.makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let url = "http://relay:s3cr%3At%40pw@127.0.0.1:\(proxy.port)"
            let environment = ["https_proxy": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost,*"]
            let log = try await Self.deliverThroughBoth(apns, fcm, flags: ["--delivery-proxy", url], environment: environment,
                                                        in: directory)
            let targets = Set(proxy.requests.map(\.target))
            #expect(targets == ["127.0.0.1:\(apns.productionPort)", "127.0.0.1:\(fcm.port)"], "\(proxy.requests)")
            #expect(proxy.requests.allSatisfy { $0.user == "relay" && $0.status == 200 },
                    "\(proxy.requests)")
            #expect(try await fcm.log(count: 1, endpoint: "token").count == 1, "the token endpoint was reached through the proxy")
            #expect(!log.contains(password) && !log.contains("s3cr%3At%40pw"), "the proxy's password is never logged")
            #expect(log.contains("relay:***@127.0.0.1:\(proxy.port)"), "the listening line names the proxy without its password")
        }
    }

    /// An `https://` proxy: TLS to the proxy itself, verified with the providers' extra CA.
    @Test func anHTTPSProxyIsVerifiedAndUsed() async throws {
        try await Self.withFakesAndProxy(tls: true) { apns, fcm, proxy in
            let directory = try Registryd.makeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let url = proxy.url(tls: true).replacingOccurrences(of: "127.0.0.1", with: "localhost")
            _ = try await Self.deliverThroughBoth(apns, fcm, flags: ["--delivery-proxy", url], in: directory)
            let targets = Set(proxy.requests.map(\.target))
            #expect(targets == ["127.0.0.1:\(apns.productionPort)", "127.0.0.1:\(fcm.port)"], "\(proxy.requests)")
        }
    }

    @Test func aBadDeliveryProxyIsRefusedNamingTheFlagAndNeverItsPassword() async throws {
        let directory = try Registryd.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let account = try #require(await offThePool { FakeFCM.shared }) + "/service-account.json"
        let provider = ["--fcm-service-account", "default=\(account)", "--listen", "127.0.0.1:0"]
        for url in ["socks5://127.0.0.1:1080", "ftp://proxy:21", "http://", "http://u:hunter2@", "http://proxy:3128/path",
                    "http://proxy:port", "http://proxy:70000", "proxy:3128", "http://u:hunter2@proxy:3128?x", "http://pro xy:1"] {
            let (status, _, errors) = try await Registryd.run(["serve", "--delivery-proxy", url] + provider, in: directory)
            #expect(status == 2, "\(url): \(errors)")
            #expect(errors.contains("--delivery-proxy"), "\(url): \(errors)")
            #expect(!errors.contains("hunter2"), "\(url): \(errors)")
        }
        let (status, _, errors) = try await Registryd.run(["serve", "--listen", "127.0.0.1:0"], in: directory,
                                                          environment: ["REGISTRY_DELIVERY_PROXY": "http://proxy:3128"])
        #expect(status == 2 && errors.contains("--delivery-proxy (from REGISTRY_DELIVERY_PROXY) needs"), "\(errors)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/registry-data"), "nothing is written")
    }

    @Test func helpListsTheDeliveryProxy() async throws {
        let (status, help, _) = try await Registryd.run(["help", "serve"], in: FileManager.default.currentDirectoryPath)
        #expect(status == 0)
        #expect(help.contains("\n  --delivery-proxy URL\n      "), "\(help)")
        #expect(help.contains("env: REGISTRY_DELIVERY_PROXY\n"))
    }
}
