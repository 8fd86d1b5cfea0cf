import Foundation
import JWT
import RegistryHTTP

/// The JWT keys and the internal API key: the configured files are read
/// first (nothing written yet); what is missing is generated afterwards.
struct AuthKeys {
    var hs256Secret: [UInt8]?
    var jwks: JWKSet?
    var internalAPIKey: [UInt8]?

    struct Complete {
        var jwt: JWTConfiguration
        var internalAPIKey: [UInt8]
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
        return keys
    }

    /// Generates what was not configured (an HS256 secret only when no JWT
    /// key at all is configured) and logs where it lives, never its content.
    func completed(_ settings: Settings, logger: Logger) throws -> Complete {
        var secret = hs256Secret
        if secret == nil && jwks == nil {
            let generated = try Secrets.loadOrGenerate(directory: settings.secretsDirectory, name: Secrets.generatedHS256Name)
            logger.info(generated.created ? "secret_generated" : "secret_loaded",
                        [("kind", .string("jwt-hs256")), ("path", .string(generated.path))])
            secret = generated.bytes
        }
        var apiKey = internalAPIKey
        if apiKey == nil {
            let generated = try Secrets.loadOrGenerate(directory: settings.secretsDirectory, name: Secrets.generatedAPIKeyName)
            logger.info(generated.created ? "secret_generated" : "secret_loaded",
                        [("kind", .string("internal-api-key")), ("path", .string(generated.path))])
            apiKey = generated.bytes
        }
        return Complete(jwt: JWTConfiguration(hs256Secret: secret, jwks: jwks, issuer: settings.issuer,
                                              audience: settings.audience),
                        internalAPIKey: apiKey ?? [])
    }
}
