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
                                    interrupt: { counter.interrupts.add(1, ordering: .relaxed) })
        thread.start { counter.runs.add(1, ordering: .relaxed) }
        let deadline = Date().addingTimeInterval(5)
        while counter.runs.load(ordering: .relaxed) < 3, Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        #expect(thread.stop(), "the first stop stops the started thread")
        let runs = counter.runs.load(ordering: .relaxed)
        #expect(runs >= 3)
        #expect(thread.isStopping && counter.interrupts.load(ordering: .relaxed) == 1)
        Thread.sleep(forTimeInterval: 0.05)
        #expect(counter.runs.load(ordering: .relaxed) == runs, "no run after stop returned")
        #expect(!thread.stop(), "a second stop is a no-op")
        #expect(counter.interrupts.load(ordering: .relaxed) == 1)
    }

    @Test func runningFirstRunsOnceBeforeStartReturns() {
        let counter = Counter()
        let thread = PeriodicThread(name: "test-periodic", interval: .seconds(60))
        thread.start(runningFirst: true) { counter.runs.add(1, ordering: .relaxed) }
        #expect(counter.runs.load(ordering: .relaxed) == 1)
        thread.start(runningFirst: true) { counter.runs.add(1, ordering: .relaxed) }
        #expect(counter.runs.load(ordering: .relaxed) == 1, "only the first start starts anything")
        thread.stop()
    }

    @Test func stopWaitsForTheRunInProgress() {
        let counter = Counter()
        let thread = PeriodicThread(name: "test-periodic", interval: .milliseconds(1))
        thread.start {
            Thread.sleep(forTimeInterval: 0.1)
            counter.runs.add(1, ordering: .sequentiallyConsistent)
        }
        Thread.sleep(forTimeInterval: 0.03)
        thread.stop()
        let finished = counter.runs.load(ordering: .sequentiallyConsistent)
        #expect(finished == 1)
    }

    @Test func stopBeforeStartIsSafeAndNothingRuns() {
        let counter = Counter()
        let thread = PeriodicThread(name: "test-periodic", interval: .milliseconds(1))
        #expect(!thread.stop())
        thread.start(runningFirst: true) { counter.runs.add(1, ordering: .relaxed) }
        Thread.sleep(forTimeInterval: 0.02)
        #expect(counter.runs.load(ordering: .relaxed) == 0)
    }
}
