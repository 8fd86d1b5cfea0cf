/// Why a registry could not be opened (on either engine).
public enum RegistryOpenError: Error, Hashable, Sendable, CustomStringConvertible {
    case schemaMismatch(found: UInt64, expected: UInt64)
    /// The token key file is not the one this registry's tokens were sealed
    /// and indexed with: starting anyway would serve an empty-looking registry.
    case wrongTokenKeys(detail: String)

    public var description: String {
        switch self {
        case .schemaMismatch(let found, let expected):
            "the registry holds schema version \(found); this build reads versions up to \(expected)"
        case .wrongTokenKeys(let detail):
            "the token key file does not match this registry (\(detail)); give the key file it was written with (--token-key-file, or DIR/secrets/token-keys)"
        }
    }
}
