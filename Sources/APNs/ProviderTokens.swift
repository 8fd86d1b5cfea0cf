import Foundation
import JSON
import JWT
import Synchronization

/// The provider token (an ES256 JWT) every request of every connection
/// carries, one per key, and the rules for renewing it.
///
/// APNs refuses a token older than an hour (`ExpiredProviderToken`) and one
/// renewed too often (`TooManyProviderTokenUpdates`), so a token is renewed
/// when it is 40 minutes old, and after an `ExpiredProviderToken` answer
/// only if it is at least a minute old: never more than once a minute, however
/// many requests report the same expired token.
public final class ProviderTokens: Sendable {
    /// A token's age at which `current` renews it.
    public static let renewalAge: Int64 = 40 * 60
    /// The youngest token an `ExpiredProviderToken` answer may renew.
    public static let minimumAge: Int64 = 60

    private struct Issued {
        var token: String
        var issuedAt: Int64
        var renewals: Int
    }

    private let key: ProviderKey
    private let teamId: String
    private let keyId: String
    private let now: @Sendable () -> Int64
    private let issued: Mutex<Issued>

    /// Signs the first token at once, so a key that cannot sign fails here.
    /// - Parameter now: the time in seconds since the epoch (the `iat`
    ///   claim); tests pass a clock they move.
    public init(key: ProviderKey, teamId: String, keyId: String,
                now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }) throws(ProviderKeyError) {
        self.key = key
        self.teamId = teamId
        self.keyId = keyId
        self.now = now
        let issuedAt = now()
        guard let token = Self.sign(key: key, teamId: teamId, keyId: keyId, issuedAt: issuedAt) else {
            throw ProviderKeyError(message: "the APNs key could not sign a provider token")
        }
        issued = Mutex(Issued(token: token, issuedAt: issuedAt, renewals: 0))
    }

    /// The token to send now, renewed first when it is `renewalAge` old.
    public func current() -> String {
        let time = now()
        return issued.withLock { issued in
            if time - issued.issuedAt >= Self.renewalAge { renew(&issued, at: time) }
            return issued.token
        }
    }

    /// APNs answered `ExpiredProviderToken` to a request that carried
    /// `token`: renews it if it is still the current one and at least
    /// `minimumAge` old. Returns whether it renewed.
    @discardableResult
    public func expired(_ token: String) -> Bool {
        let time = now()
        return issued.withLock { issued in
            guard issued.token == token, time - issued.issuedAt >= Self.minimumAge else { return false }
            return renew(&issued, at: time)
        }
    }

    /// How many times the token was renewed (the first one is not counted).
    public var renewals: Int { issued.withLock { $0.renewals } }

    /// A failed signature (out of memory) keeps the old token for now.
    @discardableResult
    private func renew(_ issued: inout Issued, at time: Int64) -> Bool {
        guard let token = Self.sign(key: key, teamId: teamId, keyId: keyId, issuedAt: time) else { return false }
        issued = Issued(token: token, issuedAt: time, renewals: issued.renewals + 1)
        return true
    }

    /// `{"alg":"ES256","kid":KEYID}.{"iss":TEAMID,"iat":SECONDS}.R||S`, each base64url.
    private static func sign(key: ProviderKey, teamId: String, keyId: String, issuedAt: Int64) -> String? {
        JWTSigner.sign(header: [("kid", .string(keyId))], claims: [("iss", .string(teamId)), ("iat", .int(issuedAt))],
                       key: key.signingKey)
    }
}
