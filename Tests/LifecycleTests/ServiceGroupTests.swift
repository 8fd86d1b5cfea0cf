import Lifecycle
import Testing

@Suite struct ServiceGroupTests {
    @Test func startsInOrderAndStopsInReverse() throws {
        let log = CallLog()
        let group = ServiceGroup(["writer", "sweeper", "server"].map { RecordingService($0, log: log) })
        try group.start()
        #expect(log.all == ["start writer", "start sweeper", "start server"])
        group.stop()
        #expect(log.all == ["start writer", "start sweeper", "start server",
                            "stop server", "stop sweeper", "stop writer"])
    }

    /// The services before the failing one are stopped in reverse; the
    /// failing one (which holds nothing) and those after it are left alone.
    @Test func aFailedStartStopsTheStartedOnesInReverse() {
        let log = CallLog()
        let group = ServiceGroup([RecordingService("writer", log: log), RecordingService("sweeper", log: log),
                                  RecordingService("server", log: log, failsToStart: true),
                                  RecordingService("late", log: log)])
        do {
            try group.start()
            Issue.record("the start succeeded")
        } catch {
            guard case .failed(let service, let underlying) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(service == "server")
            #expect(underlying is RecordingService.StartFailed)
            #expect(String(describing: error).hasPrefix("server: "))
        }
        #expect(log.all == ["start writer", "start sweeper", "start server", "stop sweeper", "stop writer"])
        group.stop()
        #expect(log.all.count == 5, "a stop after a failed start stopped something again")
    }

    @Test func stopIsIdempotent() throws {
        let log = CallLog()
        let group = ServiceGroup([RecordingService("a", log: log), RecordingService("b", log: log)])
        try group.start()
        group.stop()
        group.stop()
        #expect(log.all == ["start a", "start b", "stop b", "stop a"])
    }

    /// Like `HTTPServer`: a group runs once, so a stop before the start
    /// leaves nothing to start later.
    @Test func stopBeforeStartStopsNothingAndPreventsTheStart() {
        let log = CallLog()
        let group = ServiceGroup([RecordingService("a", log: log)])
        group.stop()
        #expect(throws: ServiceGroup.StartError.self) { try group.start() }
        #expect(log.all.isEmpty)
    }

    @Test func aSecondStartIsRefused() throws {
        let log = CallLog()
        let group = ServiceGroup([RecordingService("a", log: log)])
        try group.start()
        do {
            try group.start()
            Issue.record("the second start succeeded")
        } catch {
            guard case .alreadyStarted = error else {
                Issue.record("unexpected \(error)")
                return
            }
        }
        group.stop()
        #expect(log.all == ["start a", "stop a"])
    }
}
