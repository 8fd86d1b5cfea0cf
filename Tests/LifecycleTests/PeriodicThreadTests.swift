import Foundation
import Lifecycle
import Synchronization
import Testing

@Suite struct PeriodicThreadTests {
    final class Counter: Sendable {
        let runs = Atomic<Int>(0)
        let interrupts = Atomic<Int>(0)
    }

    @Test func runsOncePerIntervalUntilStoppedThenNeverAgain() throws {
        let counter = Counter()
        let thread = PeriodicThread(name: "test-periodic", interval: .milliseconds(5),
                                    interrupt: { counter.interrupts.add(1, ordering: .relaxed) }) {
            counter.runs.add(1, ordering: .relaxed)
        }
        thread.start()
        let deadline = Date().addingTimeInterval(5)
        while counter.runs.load(ordering: .relaxed) < 3, Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        thread.stop()
        let runs = counter.runs.load(ordering: .relaxed)
        #expect(runs >= 3)
        #expect(thread.isStopping && counter.interrupts.load(ordering: .relaxed) == 1)
        Thread.sleep(forTimeInterval: 0.05)
        #expect(counter.runs.load(ordering: .relaxed) == runs, "no run after stop returned")
        thread.stop()
        #expect(counter.interrupts.load(ordering: .relaxed) == 1, "a second stop is a no-op")
    }

    @Test func stopWaitsForTheRunInProgress() {
        let counter = Counter()
        let thread = PeriodicThread(name: "test-periodic", interval: .milliseconds(1)) {
            Thread.sleep(forTimeInterval: 0.1)
            counter.runs.add(1, ordering: .sequentiallyConsistent)
        }
        thread.start()
        Thread.sleep(forTimeInterval: 0.03)
        thread.stop()
        let finished = counter.runs.load(ordering: .sequentiallyConsistent)
        #expect(finished == 1)
    }

    @Test func stopBeforeStartIsSafeAndNothingRuns() {
        let counter = Counter()
        let thread = PeriodicThread(name: "test-periodic", interval: .milliseconds(1)) { counter.runs.add(1, ordering: .relaxed) }
        thread.stop()
        thread.start()
        Thread.sleep(forTimeInterval: 0.02)
        #expect(counter.runs.load(ordering: .relaxed) == 0)
    }
}
