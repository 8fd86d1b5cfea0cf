import Foundation
import RegistryCore
import Synchronization
import RegistryTestSupport
import Testing

/// Group commit: commands that fail their own rule fail alone, and the
/// batch they shared still commits.
struct GroupCommitTests {
    /// Holds the writer thread inside `onCommit` so that every command
    /// submitted meanwhile queues up and lands in one batch.
    private final class WriterGate: Sendable {
        private let armed = Mutex(false)
        private let entered = DispatchSemaphore(value: 0)
        private let released = DispatchSemaphore(value: 0)
        let reports = Recorder<CommitBatchReport>()

        /// The `onCommit` hook: records, and blocks once when armed.
        func onCommit(_ report: CommitBatchReport) {
            reports.record(report)
            let block = armed.withLock { a -> Bool in
                defer { a = false }
                return a
            }
            guard block else { return }
            entered.signal()
            released.wait()
        }

        func arm() { armed.withLock { $0 = true } }

        /// Waits (off the cooperative pool) until the writer is held.
        func waitUntilHeld() async {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async {
                    self.entered.wait()
                    c.resume()
                }
            }
        }

        func release() { released.signal() }
    }

    @Test func aStaleCommandFailsAloneAndItsBatchStillCommits() async throws {
        let gate = WriterGate()
        let f = try makeStore { $0.onCommit = { gate.onCommit($0) } }
        defer { f.close() }
        let store = f.store
        try await store.register("alice", "d1", token: 1, sequence: 5)

        gate.arm()
        let blocker = Task { try await store.register("blocker", "d", token: 99) }
        await gate.waitUntilHeld()
        let reportsBefore = gate.reports.all.count

        let good = 8
        let submitted = Recorder<String>()
        let results = Task {
            await withTaskGroup(of: (String, RegistryError?).self) { group in
                group.addTask {
                    submitted.record("stale")
                    return ("stale", await registryError { try await store.register("alice", "d1", token: 2, sequence: 4) })
                }
                for i in 0..<good {
                    group.addTask {
                        submitted.record("g\(i)")
                        return ("g\(i)", await registryError { try await store.register("bob", "g\(i)", token: 10 + i) })
                    }
                }
                return await group.reduce(into: [String: RegistryError?]()) { $0[$1.0] = $1.1 }
            }
        }
        // Every task has called in; give the last ones a moment to reach the queue, then let the writer go.
        while submitted.all.count < good + 1 { await Task.yield() }
        try await Task.sleep(for: .milliseconds(200))
        gate.release()

        let outcome = await results.value
        _ = try await blocker.value
        #expect(outcome["stale"] == .some(.staleWrite))
        for i in 0..<good { #expect(outcome["g\(i)"] == .some(nil), "good command g\(i) succeeded") }
        #expect(Array(gate.reports.all.dropFirst(reportsBefore)).map(\.commands) == [good + 1],
                "the stale command and the good ones shared one batch")
        #expect(gate.reports.all.allSatisfy { $0.succeeded })
        #expect(try await store.deviceIds("bob").count == good)
        #expect(try await store.device(userId: "alice", deviceId: "d1")?.pushToken?.token == apnsToken(1))
    }
}
