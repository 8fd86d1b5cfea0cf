/// A running server as a token key rotation sees it: which sealing keys it
/// holds, so the rotation retires an old key only once every server has
/// loaded the new one (`RegistryMaintenance.sealingKeyHolders`).
public struct SealingKeyHolder: Sendable, Hashable, CustomStringConvertible {
    /// "pid 1234 on host-a".
    public let name: String
    /// The key it seals under.
    public let currentKeyID: UInt8
    public let keyIDs: [UInt8]

    public init(name: String, currentKeyID: UInt8, keyIDs: [UInt8]) {
        self.name = name
        self.currentKeyID = currentKeyID
        self.keyIDs = keyIDs
    }

    public var description: String { "\(name) (seals under key \(currentKeyID))" }
}

/// Held by one token key rotation at a time per registry
/// (`RegistryMaintenance.lockKeyRotation`); released by `release()` or when
/// the process ends.
public protocol KeyRotationLock: Sendable {
    func release()
}

/// Why a token key rotation stopped. Nothing is lost by any of them: the
/// key file keeps every key a stored value may be sealed under.
public enum KeyRotationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Another rotation of this registry is running.
    case inProgress(holder: String)
    /// These servers did not load the new key in time: it stays in the
    /// key file beside the old ones, and running the rotation again resumes.
    case serversWithoutNewKey(keyID: UInt8, servers: [SealingKeyHolder], waitedSeconds: Int)
    /// Values are still sealed under old keys after every pass.
    case stillSealedUnderOldKeys(count: Int, passes: Int)

    public var description: String {
        switch self {
        case .inProgress(let holder):
            "another rotate-token-key is running on this registry (\(holder)); run one at a time"
        case .serversWithoutNewKey(let keyID, let servers, let waited):
            "after \(waited)s these servers still do not seal under the new key \(keyID): "
                + servers.map(\.description).joined(separator: ", ")
                + ". Give them the key file (its owner and mode must let them read it); they load it within a second. Every key stays in the key file; run rotate-token-key again to finish (it resumes with key \(keyID))"
        case .stillSealedUnderOldKeys(let count, let passes):
            "\(count) tokens are still sealed under an old key after \(passes) passes; every key stays in the key file; run rotate-token-key again"
        }
    }
}
