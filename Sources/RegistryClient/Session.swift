/// A signed-in session: who the requests are for, and how to authenticate them.
///
/// The server binds a registration to the user in the request's JWT, and a
/// sign-out must be sent with the credential of the user who is leaving, so the
/// session carries its own credential provider. The provider is asked before
/// every request, so it may refresh an expiring token; it is kept after
/// sign-out until that user's sequenced delete has been sent.
///
/// `epoch` stands for the server-side session the app cannot see: every
/// sign-in after a sign-out (or an account switch) gets a new one, which makes
/// the desired state new, so nothing learnt or refused under the old session
/// carries over to the next.
public struct Session: Sendable {
    public let userId: String
    public let epoch: UInt64
    public let credentials: @Sendable () async throws -> String

    public init(userId: String, epoch: UInt64, credentials: @escaping @Sendable () async throws -> String) {
        self.userId = userId
        self.epoch = epoch
        self.credentials = credentials
    }
}
