import Foundation
import JWT
import RegistryHTTP

/// The JWT keys, the internal API key and the read-only operator key: the
/// configured files are read first (nothing written yet); what is missing
/// is generated afterwards.
struct AuthKeys {
    var hs256Secret: [UInt8]?
    var jwks: JWKSet?
    var internalAPIKey: [UInt8]?
    var operatorKey: [UInt8]?

    struct Complete {
        var jwt: JWTConfiguration
        var internalAPIKey: [UInt8]
        var operatorKey: [UInt8]
    }

    static func configured(_ settings: Settings) throws(Arguments.Failure) -> AuthKeys {
        var keys = AuthKeys()
        keys.hs256Secret = try settings.hs256SecretFile.map { path throws(Arguments.Failure) in
            try Secrets.read(path, flag: "jwt-hs256-secret-file", minimumBytes: Secrets.minimumBytes)
        }
        if let path = settings.jwksFile {
            // Public keys: no secret, so any mode.
            guard let bytes = DurableFile.read(path) else {
                throw Arguments.Failure(description: "--jwt-jwks-file: cannot read '\(path)'")
            }
            do {
                keys.jwks = try JWKSet(json: bytes)
            } catch {
                throw Arguments.Failure(description: "--jwt-jwks-file: '\(path)': \(error)")
            }
        }
        keys.internalAPIKey = try settings.internalAPIKeyFile.map { path throws(Arguments.Failure) in
            try Secrets.read(path, flag: "internal-api-key-file", minimumBytes: Secrets.minimumBytes)
        }
        keys.operatorKey = try settings.operatorKeyFile.map { path throws(Arguments.Failure) in
            try Secrets.read(path, flag: "operator-key-file", minimumBytes: Secrets.minimumBytes)
        }
        return keys
    }

    /// Generates what was not configured (an HS256 secret only when no JWT
    /// key at all is configured) and logs where it lives, never its content.
    /// An operator key equal to the internal key is refused: it would not
    /// be read-only.
    func completed(_ settings: Settings, logger: Logger) throws -> Complete {
        let secret = hs256Secret == nil && jwks == nil
            ? try Self.generated(Secrets.generatedHS256Name, kind: "jwt-hs256", settings, logger) : hs256Secret
        let apiKey = try internalAPIKey ?? Self.generated(Secrets.generatedAPIKeyName, kind: "internal-api-key", settings, logger)
        let readOnlyKey = try operatorKey ?? Self.generated(Secrets.generatedOperatorKeyName, kind: "operator-key", settings, logger)
        guard readOnlyKey != apiKey else {
            throw Arguments.Failure(description: "--operator-key-file: the operator key is the internal API key; a read-only key must be a key of its own")
        }
        return Complete(jwt: JWTConfiguration(hs256Secret: secret, jwks: jwks, issuer: settings.issuer,
                                              audience: settings.audience),
                        internalAPIKey: apiKey, operatorKey: readOnlyKey)
    }

    /// The secret `name` in the data directory's `secrets/`, generated when absent; logged by `kind` and path.
    private static func generated(_ name: String, kind: String, _ settings: Settings, _ logger: Logger) throws -> [UInt8] {
        let generated = try Secrets.loadOrGenerate(directory: settings.secretsDirectory, name: name)
        logger.info(generated.created ? "secret_generated" : "secret_loaded", [("kind", .string(kind)), ("path", .string(generated.path))])
        return generated.bytes
    }
}
