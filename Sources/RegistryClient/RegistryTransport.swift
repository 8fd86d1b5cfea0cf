import Foundation

/// One HTTP request to the registry, as plain values.
public struct RegistryRequest: Sendable, Equatable {
    public var method: String
    /// Path and query, percent-encoded, e.g. `/v1/devices/d1?sequence=7`.
    public var path: String
    public var headers: [String: String]
    public var body: Data?

    public init(method: String, path: String, headers: [String: String] = [:], body: Data? = nil) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }
}

/// The server's answer, as plain values.
public struct RegistryResponse: Sendable, Equatable {
    public var status: Int
    /// Header names lowercased.
    public var headers: [String: String]
    public var body: Data

    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }) { _, last in last }
        self.body = body
    }
}

/// The seam between the queue and the network.
///
/// The queue decides what to send and how to react; a transport only moves
/// bytes. Tests substitute one that answers from a script, so every rule of
/// the queue is tested without a socket. A thrown error counts as a network
/// failure and is retried; a transport should honour task cancellation,
/// which the queue uses to abandon a signed-out session's request.
public protocol RegistryTransport: Sendable {
    func send(_ request: RegistryRequest) async throws -> RegistryResponse
}
