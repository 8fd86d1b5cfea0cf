import Foundation
import TokenSealing
import HTTPServer
import JSON
import JWT
import RegistryCore
import RegistryLMDB
import RegistryTestSupport
import Synchronization
@testable import RegistryHTTP

/// Collects log lines so tests can check what was (not) logged.
final class LogCapture: Sendable {
    private let lines = Mutex<[String]>([])

    var all: String { lines.withLock { $0.joined() } }

    func append(_ line: [UInt8]) { lines.withLock { $0.append(String(decoding: line, as: UTF8.self)) } }
}

/// What a request answered, with its body parsed when it is JSON.
struct Reply {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    var json: JSONValue { (try? JSONParser.parse(body)) ?? .null }
    var text: String { String(decoding: body, as: UTF8.self) }
    var errorCode: String? { json["error"]?["code"]?.string }
    var errorMessage: String { json["error"]?["message"]?.string ?? "" }

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}

extension JSONValue {
    subscript(_ name: String) -> JSONValue? {
        guard case .object(let object) = self else { return nil }
        return object[name]
    }

    subscript(_ index: Int) -> JSONValue? {
        guard case .array(let items) = self, items.indices.contains(index) else { return nil }
        return items[index]
    }

    var string: String? { if case .string(let s) = self { s } else { nil } }
    var int: Int64? { exactInt64 }
    var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
    var array: [JSONValue] { if case .array(let a) = self { a } else { [] } }
    var isNull: Bool { self == .null }
}

/// Who a test request claims to be.
enum Caller {
    case user(String)
    case apiKey
    /// The read-only operator key.
    case operatorKey
    case bearer(String)
    case none
}

/// A `RegistryApplication` over a real LMDB store in a temporary directory.
struct Harness {
    static let apiKey = "test-internal-api-key"
    static let operatorKey = "test-read-only-operator-key"
    static let secret = Array("test-hs256-secret".utf8)

    let application: RegistryApplication
    let store: LMDBRegistryStore
    let clock: TestClock
    let logs: LogCapture
    let directory: String

    /// Runs `body` with a fresh harness and tears it down afterwards.
    /// The apps every harness declares (`--apps`) besides `default`.
    static let apps = try! DeclaredApps(["com.acme.one", "com.acme.two", "com.example.scores", "com.example.watch"])

    static func with(maxDevicesPerUser: Int = 20, deviceTTL: Duration = .seconds(90 * 86_400),
                     activityTTL: Duration = .seconds(90 * 86_400), apps: DeclaredApps = Harness.apps,
                     _ body: (Harness) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("registryhttp-\(UUID().uuidString)").path
        let clock = TestClock(milliseconds: 1_796_209_445_123)
        var configuration = LMDBRegistryStore.Configuration(directory: directory, tokenKeys: try TokenKeyRing.generate())
        configuration.limits.maxDevicesPerUser = maxDevicesPerUser
        configuration.limits.deviceTTL = deviceTTL
        configuration.limits.activityTTL = activityTTL
        configuration.clock = clock
        configuration.limits.apps = apps
        configuration.initialMapSize = 4 << 20
        let store = try LMDBRegistryStore(configuration: configuration)
        let logs = LogCapture()
        let logger = Logger(minimumLevel: .debug, sink: { logs.append($0) })
        let verifier = JWTVerifier(configuration: JWTConfiguration(hs256Secret: secret))
        let application = RegistryApplication(
            store: store,
            authenticator: Authenticator(verifier: verifier, internalAPIKey: Array(apiKey.utf8),
                                         operatorKey: Array(operatorKey.utf8), clock: clock),
            metrics: RegistryMetrics(), logger: logger)
        let harness = Harness(application: application, store: store, clock: clock, logs: logs, directory: directory)
        defer {
            store.shutdown()
            try? FileManager.default.removeItem(atPath: directory)
        }
        try await body(harness)
    }

    func jwt(user: String, expiresIn seconds: Int64 = 3600, extra: [String: JWTClaimValue] = [:]) -> String {
        let now = clock.now().milliseconds / 1000
        var claims: [String: JWTClaimValue] = ["sub": .string(user), "exp": .int(now + seconds)]
        for (k, v) in extra { claims[k] = v }
        return JWTSigner.hs256(claims: claims, secret: Self.secret)
    }

    /// Sends a request through `head` then the handler it chose, as the server adapter does.
    @discardableResult
    func send(_ method: String, _ target: String, body: String? = nil, as caller: Caller = .user("alice"),
              contentType: String? = "application/json", headers extra: [(String, String)] = []) async -> Reply {
        var headers: [(String, String)] = extra
        switch caller {
        case .user(let user): headers.append(("Authorization", "Bearer \(jwt(user: user))"))
        case .apiKey: headers.append(("Authorization", "Bearer \(Self.apiKey)"))
        case .operatorKey: headers.append(("Authorization", "Bearer \(Self.operatorKey)"))
        case .bearer(let token): headers.append(("Authorization", "Bearer \(token)"))
        case .none: break
        }
        let bytes = body.map { Array($0.utf8) } ?? []
        if body != nil {
            if let contentType { headers.append(("Content-Type", contentType)) }
            headers.append(("Content-Length", String(bytes.count)))
        }
        let parts = target.split(separator: "?", maxSplits: 1).map(String.init)
        let head = HTTPRequest(method: method, path: parts[0], query: parts.count > 1 ? parts[1] : nil,
                               headers: headers)
        let handler: RequestHandler
        switch application.head(head) {
        case .respond(let response):
            return Reply(status: response.status, headers: response.headers, body: response.body)
        case .readBody(let maxBytes, let then):
            if bytes.count > maxBytes {
                return Reply(status: 413, headers: [], body: Array(#"{"error":{"code":"payload_too_large"}}"#.utf8))
            }
            handler = then
        }
        var request = head
        request.body = bytes
        let response: HTTPResponse
        switch handler {
        case .inline(let respond): response = respond(request)
        case .suspending(let respond): response = await respond(request)
        }
        return Reply(status: response.status, headers: response.headers, body: response.body)
    }

    /// A launch upsert of `deviceId` for `user`; extra JSON members are spliced in.
    @discardableResult
    func register(_ deviceId: String, user: String = "alice", _ members: String = "") async -> Reply {
        let extra = members.isEmpty ? "" : ", " + members
        return await send("POST", "/v1/devices", body: #"{"deviceId": "\#(deviceId)"\#(extra)}"#, as: .user(user))
    }

    /// The sender view of a user's devices (internal API).
    func senderDevices(_ user: String) async -> [JSONValue] {
        await send("GET", "/internal/v1/users/\(user)/devices", as: .apiKey).json["devices"]?.array ?? []
    }
}

/// 32-byte APNs tokens for tests: `token(1)` is "0101…01".
func token(_ n: UInt8) -> String {
    String(repeating: String(format: "%02x", n), count: 32)
}
