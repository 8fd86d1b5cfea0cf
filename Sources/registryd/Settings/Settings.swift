import Foundation
import HTTPServer
import JWT
import RegistryCore
import RegistryHTTP

/// Everything `serve` and the operator subcommands are configured with,
/// resolved and validated from flags and environment before anything is
/// written, so a bad value stops the process naming the flag.
///
/// The store's and the server's settings start from their own configuration
/// types' defaults, so a default is written down once, next to what it
/// configures; a flag only overrides.
struct Settings {
    var dataDirectory = "./registry-data"
    /// `--store`: LMDB in `DIR/lmdb`, or PostgreSQL at `--postgres-url`.
    var backend: StoreBackend
    /// The TTLs, caps and declared apps, given to the backend's configuration by `openStore`.
    var limits: RegistryLimits
    /// `serve`'s HTTP server: `HTTPServerConfiguration`'s defaults, then
    /// `--listen` and the connection limits and deadlines.
    var server = HTTPServerConfiguration()
    var hs256SecretFile: String?
    var jwksFile: String?
    var issuer: String?
    var audience: String?
    var internalAPIKeyFile: String?
    /// `--operator-key-file`: the read-only key; `DIR/secrets/operator.key` when nil.
    var operatorKeyFile: String?
    /// `--token-key-file`; `DIR/secrets/token-keys` when nil.
    var tokenKeyFile: String?
    var sweepInterval: Duration = .seconds(3600)
    /// How long `serve` retries an unreachable PostgreSQL at start before exiting 1.
    var postgresStartupTimeout: Duration = .seconds(30)
    var logLevel = Logger.Level.info
    /// Delivery through APNs; `nil` when no key is configured.
    var delivery: DeliverySettings?

    init(_ arguments: Arguments) throws(Arguments.Failure) {
        if let (value, source) = arguments.value("data-dir") {
            guard !value.isEmpty else { throw Arguments.Failure(description: "\(source) must not be empty") }
            dataDirectory = value
        }
        backend = try StoreBackend(arguments)
        limits = try StoreRules.limits(arguments)
        if let (value, source) = arguments.value("listen") {
            guard let address = ValueParsing.listenAddress(value) else {
                throw Arguments.Failure(description: "\(source) must be HOST:PORT with an IP address or localhost, e.g. 127.0.0.1:8080 or [::1]:8080")
            }
            (server.host, server.port) = address
        }
        hs256SecretFile = try Self.nonEmpty(arguments, "jwt-hs256-secret-file")
        jwksFile = try Self.nonEmpty(arguments, "jwt-jwks-file")
        internalAPIKeyFile = try Self.nonEmpty(arguments, "internal-api-key-file")
        operatorKeyFile = try Self.nonEmpty(arguments, "operator-key-file")
        tokenKeyFile = try Self.nonEmpty(arguments, "token-key-file")
        issuer = try Self.nonEmpty(arguments, "jwt-issuer")
        audience = try Self.nonEmpty(arguments, "jwt-audience")
        sweepInterval = try Self.duration(arguments, "sweep-interval") ?? sweepInterval
        postgresStartupTimeout = try Self.duration(arguments, "postgres-startup-timeout") ?? postgresStartupTimeout
        try readConnectionLimits(arguments)
        delivery = try DeliverySettings.read(arguments, apps: limits.apps)
        if let (value, source) = arguments.value("log-level") {
            guard let level = Logger.Level(name: value) else {
                throw Arguments.Failure(description: "\(source) must be one of debug, info, warning, error")
            }
            logLevel = level
        }
    }

    /// `--max-connections` (1–1,000,000), `--max-connections-per-address`
    /// (0 = off, up to 1,000,000), `--header-timeout`, `--body-timeout`.
    private mutating func readConnectionLimits(_ arguments: Arguments) throws(Arguments.Failure) {
        if let (value, source) = arguments.value("max-connections") {
            guard let n = ValueParsing.positiveInt(value, max: 1_000_000) else {
                throw Arguments.Failure(description: "\(source) must be a whole number from 1 to 1000000")
            }
            server.connectionLimit = n
        }
        if let (value, source) = arguments.value("max-connections-per-address") {
            guard let n = value == "0" ? 0 : ValueParsing.positiveInt(value, max: 1_000_000) else {
                throw Arguments.Failure(description: "\(source) must be a whole number from 0 (off) to 1000000")
            }
            server.perIPConnectionLimit = n
        }
        server.headerTimeout = try Self.duration(arguments, "header-timeout") ?? server.headerTimeout
        server.bodyTimeout = try Self.duration(arguments, "body-timeout") ?? server.bodyTimeout
    }

    var layout: DataDirectory { DataDirectory(path: dataDirectory) }

    var secretsDirectory: String { layout.secrets }

    private static func nonEmpty(_ arguments: Arguments, _ flag: String) throws(Arguments.Failure) -> String? {
        guard let (value, source) = arguments.value(flag) else { return nil }
        guard !value.isEmpty else { throw Arguments.Failure(description: "\(source) must not be empty") }
        return value
    }

    static func duration(_ arguments: Arguments, _ flag: String) throws(Arguments.Failure) -> Duration? {
        guard let (value, source) = arguments.value(flag) else { return nil }
        guard let duration = ValueParsing.duration(value) else {
            throw Arguments.Failure(description: "\(source) \(ValueParsing.durationRule), got '\(value)'")
        }
        return duration
    }
}
