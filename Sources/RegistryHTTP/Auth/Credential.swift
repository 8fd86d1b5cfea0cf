/// Who is calling, once the bearer credential has been checked.
public enum Credential: Hashable, Sendable {
    /// A verified device JWT; its `sub`.
    case device(userId: String)
    /// The internal API key (the push sender, operators, Prometheus): every internal route.
    case internalKey
    /// The read-only operator key: the internal reads that carry no token
    /// (`Endpoint.OperatorAccess`), so a person on call, or the console, can
    /// look without being able to change anything or see a token.
    case operatorKey
    /// No credential was asked for: the open routes (`/healthz`,
    /// `/openapi.json`, the console's files), which read no one's data. Whatever the request
    /// carries in `Authorization` is not looked at, so it gains nothing.
    case anonymous
}
