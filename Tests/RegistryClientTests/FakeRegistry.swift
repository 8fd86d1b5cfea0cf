import Foundation
import RegistryClient
import Synchronization

/// A transport that is also a small model of the server: it applies docs/api.md's
/// rules that the client relies on (launch upsert, `pushToken: null`, token
/// routes, sign-out, and the `sequence` verdict with tombstones), so a test
/// can check where the server ended up, not only which requests went out.
/// Tests can script answers and hold one request in flight.
final class FakeRegistry: RegistryTransport {
    struct Device: Equatable {
        var pushToken: String?
        var environment = "production"
        var osVersion: String?
        var appVersion: String?
        var sequence: UInt64?
        var pushToStartToken: String?
        var activities: [String: String] = [:]
    }

    /// One request as the server saw it.
    struct Seen {
        var method: String
        var path: String
        var user: String
        var bodyData: Data?
        var sequence: UInt64?
        var status: Int?

        var body: [String: Any] { FakeRegistry.object(bodyData) }
    }

    static func object(_ data: Data?) -> [String: Any] {
        data.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] } ?? [:]
    }

    struct Key: Hashable {
        var user: String
        var device: String
    }

    private struct State {
        var devices: [Key: Device] = [:]
        var tombstones: [Key: UInt64] = [:]
        var seen: [Seen] = []
        var script: (@Sendable (RegistryRequest) -> RegistryResponse?)?
        var holdNext = false
        var offline = false
        var held: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    var seen: [Seen] { state.withLock { $0.seen } }

    /// Completed requests (those with a status), in arrival order.
    var answered: [Seen] { seen.filter { $0.status != nil } }

    func device(_ user: String, _ device: String = "phone-1") -> Device? {
        state.withLock { $0.devices[Key(user: user, device: device)] }
    }

    /// Answers requests from `script` while it returns a response (the model
    /// is not touched), and from the model when it returns nil.
    func script(_ script: (@Sendable (RegistryRequest) -> RegistryResponse?)?) {
        state.withLock { $0.script = script }
    }

    /// Stores a sequence for a device as another install would have.
    func storeSequence(_ sequence: UInt64, user: String, device: String = "phone-1") {
        state.withLock { $0.devices[Key(user: user, device: device), default: Device()].sequence = sequence }
    }

    /// While offline, every request fails as a network error and is not recorded.
    func setOffline(_ offline: Bool) { state.withLock { $0.offline = offline } }

    /// The next request arrives (is recorded) but is applied only at `release()`.
    func holdNextRequest() { state.withLock { $0.holdNext = true } }

    /// Whether a held request is waiting for `release()`.
    var isHolding: Bool { state.withLock { $0.held != nil } }

    func release() {
        let held = state.withLock { state in
            defer { state.held = nil }
            return state.held
        }
        held?.resume()
    }

    func send(_ request: RegistryRequest) async throws -> RegistryResponse {
        if state.withLock({ $0.offline }) { throw URLError(.notConnectedToInternet) }
        let user = String((request.headers["Authorization"] ?? "").dropFirst("Bearer token-".count))
        let components = URLComponents(string: "http://fake" + request.path)!
        let body = Self.object(request.body)
        let querySequence = components.queryItems?.first { $0.name == "sequence" }?.value.flatMap { UInt64($0) }
        let sequence = (body["sequence"] as? NSNumber)?.uint64Value ?? querySequence
        let seen = Seen(method: request.method, path: components.percentEncodedPath, user: user, bodyData: request.body,
                        sequence: sequence)
        let (index, hold) = state.withLock { state in
            state.seen.append(seen)
            defer { state.holdNext = false }
            return (state.seen.count - 1, state.holdNext)
        }
        if hold { await withCheckedContinuation { continuation in state.withLock { $0.held = continuation } } }
        let response = state.withLock { state in
            let response = state.script?(request)
                ?? Self.apply(&state, request.method, components, user, Self.object(request.body), sequence)
            state.seen[index].status = response.status
            return response
        }
        return response
    }

    private static func apply(_ state: inout State, _ method: String, _ components: URLComponents, _ user: String,
                              _ body: [String: Any], _ sequence: UInt64?) -> RegistryResponse {
        let parts = components.percentEncodedPath.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        let query = { (name: String) in components.queryItems?.first { $0.name == name }?.value }
        let deviceId = (body["deviceId"] as? String) ?? (parts.count > 2 && parts[1] == "devices" ? parts[2] : query("deviceId") ?? "")
        let key = Key(user: user, device: deviceId)
        let stored = state.devices[key]
        if let sequence {
            if let tombstone = state.tombstones[key], tombstone >= sequence { return RegistryResponse(status: 409) }
            if let storedSequence = stored?.sequence, storedSequence > sequence { return RegistryResponse(status: 409) }
        }
        if method == "GET" {
            guard let stored else { return RegistryResponse(status: 404) }
            let body = #"{"device":{"deviceId":"\#(deviceId)","sequence":\#(stored.sequence.map(String.init) ?? "null")}}"#
            return RegistryResponse(status: 200, body: Data(body.utf8))
        }
        var device = stored ?? Device()
        if let sequence { device.sequence = sequence }
        switch (method, parts.count, parts.last) {
        case ("POST", 2, "devices"):
            if body.keys.contains("pushToken") { device.pushToken = body["pushToken"] as? String }
            device.environment = body["environment"] as? String ?? device.environment
            device.osVersion = body["osVersion"] as? String ?? device.osVersion
            device.appVersion = body["appVersion"] as? String ?? device.appVersion
        case ("POST", 3, "push-to-start-token"):
            device.pushToStartToken = body["token"] as? String
        case ("POST", 4, "activity-token"):
            device.activities[parts[2]] = body["token"] as? String
        case ("DELETE", 3, _):
            state.devices[key] = nil
            if let sequence { state.tombstones[key] = max(sequence, state.tombstones[key] ?? 0) }
            return RegistryResponse(status: 204)
        case ("DELETE", 4, "push-to-start-token"):
            guard stored != nil else { return RegistryResponse(status: 204) }
            device.pushToStartToken = nil
        case ("DELETE", 4, "activity-token"):
            guard stored != nil else { return RegistryResponse(status: 204) }
            device.activities[parts[2]] = nil
        default:
            return RegistryResponse(status: 404)
        }
        state.devices[key] = device
        return RegistryResponse(status: method == "DELETE" ? 204 : (stored == nil ? 201 : 200))
    }
}
