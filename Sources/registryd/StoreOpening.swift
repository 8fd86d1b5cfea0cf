import Foundation
import Glibc
import TokenSealing
import Registry
import RegistryHTTP

/// The one way a subcommand opens the registry in `--data-dir`: with the
/// configuration `Settings` resolved, so `serve` and every operator command
/// enforce the same TTLs and limits.
extension Settings {
    /// Whether a missing registry is created or refused.
    enum StoreOpening {
        /// `serve`: the first start creates the registry.
        case creatingIfMissing
        /// Operator commands: a directory that holds no registry is a bad
        /// `--data-dir` (exit 2), not an empty registry to report on.
        case existing
    }

    /// Opens the store; with `metrics`, every commit and sweep step is
    /// recorded there; `onSweepStep` (a command's progress line) sees each sweep step.
    /// `lmdbDirectory` opens another environment (a backup's) with the same settings and keys.
    func openStore(_ opening: StoreOpening, lmdbDirectory: String? = nil, metrics: RegistryMetrics? = nil,
                   onSweepStep: (@Sendable (SweepBatchReport) -> Void)? = nil) throws -> LMDBRegistryStore {
        let directory = lmdbDirectory ?? layout.lmdb
        if opening == .existing, !FileManager.default.fileExists(atPath: directory) {
            throw Arguments.Failure(description: "--data-dir: no registry at '\(dataDirectory)'")
        }
        let keys = try tokenKeys()
        var configuration = LMDBRegistryStore.Configuration(directory: directory, tokenKeys: keys.ring)
        rules.apply(to: &configuration)
        let keyPath = keys.path
        configuration.reloadTokenKeys = { try TokenKeyFile.load(path: keyPath) }
        if let metrics { configuration.onCommit = { report in metrics.recordCommit(report) } }
        if metrics != nil || onSweepStep != nil {
            configuration.onSweepBatch = { report in
                metrics?.recordSweepStep(report)
                onSweepStep?(report)
            }
        }
        do {
            return try LMDBRegistryStore(configuration: configuration)
        } catch let error as RegistryOpenError {
            guard case .wrongTokenKeys = error else { throw error }
            // A key file generated just now for a registry that has one elsewhere: do not leave it behind.
            if keys.generated { unlink(keys.path) }
            throw Arguments.Failure(description: "--token-key-file: \(error)")
        }
    }

    /// The token keys: `--token-key-file`, which must exist, or
    /// `DIR/secrets/token-keys`, generated on first start (0600, atomic).
    func tokenKeys() throws(Arguments.Failure) -> (ring: TokenKeyRing, path: String, generated: Bool) {
        do {
            if let path = tokenKeyFile { return (try TokenKeyFile.load(path: path), path, false) }
            let path = layout.tokenKeys
            let (ring, created) = try TokenKeyFile.loadOrGenerate(path: path)
            return (ring, path, created)
        } catch {
            throw Arguments.Failure(description: "--token-key-file: \(error)")
        }
    }
}
