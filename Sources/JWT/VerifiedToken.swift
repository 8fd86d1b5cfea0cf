/// What a verified token says, for the caller to act on. The caller still
/// validates `subject` as a user id: this module only guarantees it is a
/// string the key holder signed.
public struct VerifiedToken: Sendable, Hashable {
    /// `sub`.
    public var subject: String
    /// `exp`, seconds since the epoch.
    public var expiresAt: Int64
    /// `iss`, when the token has one.
    public var issuer: String?
    /// `aud` as a list (a single string becomes one element; none is empty).
    public var audience: [String]

    public init(subject: String, expiresAt: Int64, issuer: String? = nil, audience: [String] = []) {
        self.subject = subject
        self.expiresAt = expiresAt
        self.issuer = issuer
        self.audience = audience
    }
}
