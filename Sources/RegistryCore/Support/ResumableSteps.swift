/// Work done in bounded steps, each its own short transaction, each
/// resuming where the one before stopped (a key, or a row's key columns),
/// so long work (a sweep, a re-seal, a repair) never holds a writer for
/// long and interleaves with other writes.
package enum ResumableSteps {
    /// Runs `step` from the start (`nil`) and again from each position it
    /// returns, until it returns none. A cancelled task stops between two
    /// steps with `CancellationError`; what the steps did stays done.
    package static func run<Position>(_ step: (_ from: Position?) async throws -> Position?) async throws {
        var position: Position?
        repeat {
            try Task.checkCancellation()
            position = try await step(position)
        } while position != nil
    }
}
