import Foundation
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
    func openStore(_ opening: StoreOpening, metrics: RegistryMetrics? = nil,
                   onSweepStep: (@Sendable (SweepBatchReport) -> Void)? = nil) throws -> LMDBRegistryStore {
        if opening == .existing, !FileManager.default.fileExists(atPath: store.directory) {
            throw Arguments.Failure(description: "--data-dir: no registry at '\(dataDirectory)'")
        }
        var configuration = store
        if let metrics { configuration.onCommit = { report in metrics.recordCommit(report) } }
        if metrics != nil || onSweepStep != nil {
            configuration.onSweepBatch = { report in
                metrics?.recordSweepStep(report)
                onSweepStep?(report)
            }
        }
        return try LMDBRegistryStore(configuration: configuration)
    }
}
