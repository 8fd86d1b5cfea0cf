import Codecs
import HTTPServer
import JWT
import RegistryCore

/// Checks the bearer credential of a request against the route's surface.
///
/// 401 versus 403, as docs/api.md says: a missing, malformed, expired or wrongly
/// signed credential is 401; a *valid* credential of the wrong kind (a device
/// JWT on `/internal`, either API key on `/v1`) is 403. Which internal routes
/// the read-only operator key may call is the route's own rule
/// (`Endpoint.admits`). The keys are compared in constant time, both of them
/// every time; JWT verification is cached inside `JWTVerifier`, so
/// RS256/ES256 cost is paid once per token. An open route is `.anonymous`
/// without a look at `Authorization`: no credential is checked there, so
/// none is granted.
public struct Authenticator: Sendable {
    public let verifier: JWTVerifier
    private let apiKey: [UInt8]
    private let operatorKey: [UInt8]
    /// The service's wall clock: token expiry here, and "now" wherever the
    /// application needs one (`RegistryApplication.now`).
    let clock: any WallClock

    /// `operatorKey` empty: no read-only key is accepted.
    public init(verifier: JWTVerifier, internalAPIKey: [UInt8], operatorKey: [UInt8], clock: any WallClock) {
        self.verifier = verifier
        self.apiKey = internalAPIKey
        self.operatorKey = operatorKey
        self.clock = clock
    }

    func authenticate(_ headers: HTTPHeaders, for surface: Endpoint.Surface) -> Result<Credential, APIError> {
        guard surface != .open else { return .success(.anonymous) }
        guard let header = headers["Authorization"] else {
            return .failure(.unauthenticated("Authorization header is missing"))
        }
        guard let token = Self.bearerToken(header) else {
            return .failure(.unauthenticated("Authorization header must be 'Bearer <credential>'"))
        }
        let bytes = Array(token.utf8)
        let isAPIKey = !apiKey.isEmpty && constantTimeEquals(bytes, apiKey)
        let isOperatorKey = !operatorKey.isEmpty && constantTimeEquals(bytes, operatorKey)
        switch surface {
        case .internal:
            if isAPIKey { return .success(.internalKey) }
            if isOperatorKey { return .success(.operatorKey) }
            if case .success = verifyDevice(token) {
                return .failure(.forbidden("a device token cannot call the internal API"))
            }
            return .failure(.unauthenticated("Authorization: the internal API key is not valid"))
        case .device:
            if isAPIKey { return .failure(.forbidden("the internal API key cannot call the device API")) }
            if isOperatorKey { return .failure(.forbidden("the operator key cannot call the device API")) }
            return verifyDevice(token).map { .device(userId: $0) }
        case .open:
            return .success(.anonymous)
        }
    }

    private func verifyDevice(_ token: String) -> Result<String, APIError> {
        let now = clock.now().milliseconds / 1000
        switch verifier.verify(token, now: now) {
        case .failure(let error):
            return .failure(.unauthenticated("Authorization: \(error.message)"))
        case .success(let verified):
            if let problem = Identifier.checkUserId(verified.subject) {
                return .failure(.unauthenticated("Authorization: token sub \(problem.message)"))
            }
            return .success(verified.subject)
        }
    }

    /// The credential after `Bearer ` (scheme case-insensitive, spaces
    /// around it allowed). Works on UTF-8 bytes: this runs on every request.
    static func bearerToken(_ header: String) -> String? {
        let bytes = Array(header.utf8)
        var start = 0
        while start < bytes.count, bytes[start] == 0x20 { start += 1 }
        let scheme = Array("bearer ".utf8)
        guard bytes.count - start > scheme.count,
              zip(bytes[start..<start + scheme.count], scheme).allSatisfy({ ($0 | 0x20) == $1 }) else { return nil }
        start += scheme.count
        while start < bytes.count, bytes[start] == 0x20 { start += 1 }
        var end = bytes.count
        while end > start, bytes[end - 1] == 0x20 { end -= 1 }
        guard end > start, !bytes[start..<end].contains(0x20) else { return nil }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }
}
