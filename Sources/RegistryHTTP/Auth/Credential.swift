/// Who is calling, once the bearer credential has been checked.
public enum Credential: Hashable, Sendable {
    /// A verified device JWT; its `sub`.
    case device(userId: String)
    /// The internal API key (the push sender, operators, Prometheus).
    case operatorKey
}
