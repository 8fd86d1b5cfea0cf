import Foundation
import Glibc
import Lifecycle
import Postgres
import TokenSealing
import RegistryCore
import RegistryPostgres
import RegistryLMDB
import RegistryHTTP

/// The one way a subcommand opens the registry `--store` names: with the
/// configuration `Settings` resolved, so `serve` and every operator command
/// enforce the same TTLs and limits on either backend.
extension Settings {
    /// Whether a missing registry is created or refused.
    enum StoreOpening {
        /// `serve`: the first start creates the registry.
        case creatingIfMissing
        /// Operator commands: a directory that holds no registry is a bad
        /// `--data-dir` (exit 2), not an empty registry to report on. With
        /// PostgreSQL the token key file must exist (none is generated);
        /// the store creates its tables in an empty database either way.
        case existing
    }

    /// The database could not be opened. The message names `--postgres-url`
    /// with the URL redacted, and never holds its password.
    struct DatabaseFailure: Error, CustomStringConvertible {
        let description: String
        /// No connection, or one that broke: a later attempt may succeed
        /// (`serve` retries at start). Otherwise the database refused (a
        /// permission, a read-only server without `target_session_attrs`).
        let isTransient: Bool
    }

    /// Opens the store; with `metrics`, every commit and sweep step is
    /// recorded there; `onSweepStep` (a command's progress line) sees each
    /// sweep step. Throws `Arguments.Failure` (exit 2) for a missing LMDB
    /// registry or token keys the registry was not written with, and
    /// `DatabaseFailure` when PostgreSQL cannot be reached or refuses.
    func openStore(_ opening: StoreOpening, metrics: RegistryMetrics? = nil,
                   onSweepStep: (@Sendable (SweepBatchReport) -> Void)? = nil) throws -> any RegistryMaintenance & Service {
        var onSweepBatch: (@Sendable (SweepBatchReport) -> Void)?
        if metrics != nil || onSweepStep != nil {
            onSweepBatch = { report in
                metrics?.recordSweepStep(report)
                onSweepStep?(report)
            }
        }
        switch backend {
        case .lmdb:
            return try openLMDB(opening, directory: layout.lmdb, metrics: metrics, onSweepBatch: onSweepBatch)
        case .postgres(let url, let poolSize):
            // An operator command finds a registry that has keys already: it never generates a key file
            // (one made while the database is unreachable would be left behind, and refused once it is back).
            let keys = try tokenKeys(generating: opening == .creatingIfMissing)
            var configuration = PostgresRegistryStore.Configuration(connectionString: url.text, tokenKeys: keys.ring)
            configuration.reloadTokenKeys = keys.reload
            if let poolSize { configuration.poolSize = poolSize }
            if let metrics { configuration.onCommit = { report in metrics.recordCommit(report) } }
            configuration.onSweepBatch = onSweepBatch
            configuration.limits = limits
            do {
                return try PostgresRegistryStore(configuration: configuration)
            } catch let error as PostgresError {
                throw Self.failure(error, url)
            } catch let error as RegistryOpenError {
                throw Self.refusing(error, keys)
            }
        }
    }

    /// The LMDB store in `directory` (the data directory's, or a backup's)
    /// with the same settings and keys.
    func openLMDB(_ opening: StoreOpening, directory: String, metrics: RegistryMetrics? = nil,
                  onSweepBatch: (@Sendable (SweepBatchReport) -> Void)? = nil) throws -> LMDBRegistryStore {
        if opening == .existing, !FileManager.default.fileExists(atPath: directory) {
            throw Arguments.Failure(description: "--data-dir: no registry at '\(dataDirectory)'")
        }
        // An existing registry's tokens are sealed with its key file: one is never generated for it.
        let keys = try tokenKeys(generating: opening == .creatingIfMissing)
        var configuration = LMDBRegistryStore.Configuration(directory: directory, tokenKeys: keys.ring)
        configuration.reloadTokenKeys = keys.reload
        if let metrics { configuration.onCommit = { report in metrics.recordCommit(report) } }
        configuration.onSweepBatch = onSweepBatch
        configuration.limits = limits
        do {
            return try LMDBRegistryStore(configuration: configuration)
        } catch let error as RegistryOpenError {
            throw Self.refusing(error, keys)
        }
    }

    /// A registry written with other token keys is a bad `--token-key-file`
    /// (exit 2); a key file generated just now for it is not left behind.
    private static func refusing(_ error: RegistryOpenError, _ keys: TokenKeys) -> any Error {
        guard case .wrongTokenKeys = error else { return error }
        if keys.generated { unlink(keys.path) }
        return Arguments.Failure(description: "--token-key-file: \(error)")
    }

    /// `error` as one line naming the flag and the redacted URL: libpq's
    /// message (its lines joined), scrubbed of the password it may quote.
    static func failure(_ error: PostgresError, _ url: ConnectionString) -> DatabaseFailure {
        let transient = error.kind == .connectFailed || error.kind == .connectionLost || error.connectionBroken
        let detail = error.sqlState.map { "\(error.message) (SQLSTATE \($0))" } ?? error.message
        let message = url.scrubbing(detail)
            .split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "; ")
        let what = transient ? "cannot reach the database" : "the database refused"
        return DatabaseFailure(description: "--postgres-url: \(what) at '\(url.redacted)': \(message)", isTransient: transient)
    }

    /// The token keys and where they were read.
    struct TokenKeys {
        let ring: TokenKeyRing
        let path: String
        /// Whether this run generated the file.
        let generated: Bool

        /// Reads the file again: how a running store learns a key another
        /// process's rotation added.
        var reload: @Sendable () throws -> TokenKeyRing {
            { [path] in try TokenKeyFile.load(path: path) }
        }
    }

    /// The token keys: `--token-key-file`, which must exist, or
    /// `DIR/secrets/token-keys`, generated on first start (0600, atomic)
    /// when `generating`. A missing file is named as missing, and nothing
    /// is created for it (no `secrets/` folder either).
    func tokenKeys(generating: Bool = true) throws(Arguments.Failure) -> TokenKeys {
        let path = tokenKeyFilePath
        do {
            guard tokenKeyFile == nil, generating else {
                return TokenKeys(ring: try TokenKeyFile.load(path: path), path: path, generated: false)
            }
            let (ring, created) = try TokenKeyFile.loadOrGenerate(path: path)
            return TokenKeys(ring: ring, path: path, generated: created)
        } catch where error.kind == .missing {
            throw Arguments.Failure(description: "--token-key-file: the token key file '\(path)' is missing; every token of this registry is sealed with it: give its path (--token-key-file), or restore it (a backup taken with --with-secrets holds it in secrets/)")
        } catch {
            throw Arguments.Failure(description: "--token-key-file: \(error)")
        }
    }

    /// `--token-key-file`, else `DIR/secrets/token-keys`.
    var tokenKeyFilePath: String { tokenKeyFile ?? layout.tokenKeys }
}
