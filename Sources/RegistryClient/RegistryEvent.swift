import Foundation
#if canImport(os)
import os
#endif

/// What the client did, for an app's logs and metrics: a refused payload or
/// a credential the server keeps rejecting is otherwise silent.
///
/// No event carries a token or a credential.
public enum RegistryEvent: Sendable, Equatable {
    /// The server now holds the desired state for this resource.
    case applied(RegistryResource)
    /// The server refused this payload; it is not sent again until the state
    /// changes or a new session starts. `reason` is the error body's `code`.
    case refused(RegistryResource, status: Int, reason: String?)
    /// Nothing is sent before `until` (exponential backoff, or the server's
    /// `Retry-After`).
    case backingOff(until: Date, cause: BackoffCause)
    /// A 409 was overcome by reading the server's sequence and going above it.
    case conflictResolved(RegistryResource)
    /// A sign-out's delete was answered.
    case signOutDelivered
    /// A sign-out's delete cannot succeed; the server's TTL settles it.
    case signOutGivenUp(status: Int?)
    /// A sign-out could not be saved for a later launch (this process still
    /// sends it). `error` describes the failure.
    case signOutNotSaved(error: String)

    /// Why the queue is backing off.
    public enum BackoffCause: Sendable, Equatable {
        /// A network error, a 5xx, 408 or 429.
        case unavailable
        /// 401: the credential provider's JWT is not accepted.
        case unauthenticated
        /// The credential provider threw.
        case credentialUnavailable
    }
}

/// Where events go: the client's `events` stream and, on Apple platforms,
/// the unified log (subsystem `RegistryClient`).
struct EventSink: Sendable {
    let continuation: AsyncStream<RegistryEvent>.Continuation

    func emit(_ event: RegistryEvent) {
        continuation.yield(event)
        #if canImport(os)
        Self.logger.log("\(String(describing: event), privacy: .public)")
        #endif
    }

    #if canImport(os)
    private static let logger = Logger(subsystem: "RegistryClient", category: "registration")
    #endif
}
