import Foundation
import RegistryClient
import Synchronization

/// A clock that moves only when a test says so: backoff, coalescing and
/// refresh are tested without waiting.
final class ManualClock: RegistryClock {
    private struct Sleeper {
        var id: Int
        var deadline: ContinuousClock.Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var offset: Duration = .zero
        var sleepers: [Sleeper] = []
        var cancelled: Set<Int> = []
        var nextId = 0
    }

    private let origin = ContinuousClock.now
    private let dateOrigin: Date
    private let state = Mutex(State())

    /// `date` is the wall clock at the start (what sequences are floored by).
    init(date: Date = Date(timeIntervalSince1970: 1_796_209_445)) { dateOrigin = date }

    var now: ContinuousClock.Instant { origin.advanced(by: state.withLock { $0.offset }) }

    var date: Date {
        let (seconds, attoseconds) = state.withLock { $0.offset }.components
        return dateOrigin.addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18)
    }

    func sleep(until deadline: ContinuousClock.Instant) async throws {
        let id = state.withLock { state in
            state.nextId += 1
            return state.nextId
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withLock { state in
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if origin.advanced(by: state.offset) >= deadline { return .success(()) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let sleeper: Sleeper? = state.withLock { state in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else {
                    state.cancelled.insert(id)
                    return nil
                }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time on and wakes every sleeper whose deadline has come.
    func advance(by duration: Duration) {
        let due: [Sleeper] = state.withLock { state in
            state.offset += duration
            let now = origin.advanced(by: state.offset)
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
