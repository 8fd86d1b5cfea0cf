import Foundation
import JWT
import RegistryCore

/// `registryd mint-token --user U [--ttl D]`: prints an HS256 JWT for trying
/// the API by hand, signed with the configured secret or else the generated
/// one (generated now if `serve` would generate it too), and carrying the
/// configured issuer and audience so `serve` accepts it.
enum MintTokenCommand: Subcommand {
    static let help = CommandHelp(
        name: "mint-token", synopsis: "--user U [--ttl D] [FLAGS]", tagline: "print an HS256 device JWT for trying the API",
        summary: """
            Prints an HS256 device JWT for user U, signed with --jwt-hs256-secret-file or the
            secret generated in DIR/secrets/ (generated now if serve would generate it), with
            the configured issuer and audience, so the server given the same flags accepts it.
            """,
        flags: ["user", "ttl"] + Flags.serve,
        example: """
            registryd mint-token --user alice --ttl 12h
            eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjE3OTY...
            """)

    static func run(_ arguments: Arguments) throws -> Int32 {
        let settings = try Settings(arguments)
        guard let (user, source) = arguments.value("user") else {
            throw Arguments.Failure(description: "--user is required")
        }
        if let problem = Identifier.checkUserId(user) {
            throw Arguments.Failure(description: "\(source) \(problem.message)")
        }
        var ttl: Duration = .seconds(3600)
        if let (value, source) = arguments.value("ttl") {
            guard let duration = ValueParsing.duration(value) else {
                throw Arguments.Failure(description: "\(source) \(ValueParsing.durationRule), got '\(value)'")
            }
            ttl = duration
        }
        let keys = try AuthKeys.configured(settings)
        let secret: [UInt8]
        if let configured = keys.hs256Secret {
            secret = configured
        } else {
            let generatedPath = settings.secretsDirectory + "/" + Secrets.generatedHS256Name
            guard keys.jwks == nil || FileManager.default.fileExists(atPath: generatedPath) else {
                throw Arguments.Failure(description: "--jwt-hs256-secret-file: no HS256 secret is configured (only a JWKS)")
            }
            secret = try Secrets.loadOrGenerate(directory: settings.secretsDirectory, name: Secrets.generatedHS256Name).bytes
        }
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: JWTClaimValue] = ["sub": .string(user), "iat": .int(now), "exp": .int(now + ttl.components.seconds)]
        if let issuer = settings.issuer { claims["iss"] = .string(issuer) }
        if let audience = settings.audience { claims["aud"] = .string(audience) }
        print(JWTSigner.hs256(claims: claims, secret: secret))
        return 0
    }
}
