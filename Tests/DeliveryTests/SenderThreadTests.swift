import Foundation
import Glibc
import RegistryCore
import RegistryDelivery
import RegistryTestSupport
import RegistrydTestSupport
import Synchronization
import Testing

/// Where the sender's own work runs: on its threads, at its nice value,
/// not on the cooperative pool the API's requests share.
@Suite struct SenderThreadTests {
    @Test func aDeliveryIsSentAndAnsweredAtTheSendersNiceValue() async throws {
        let fixture = try makeStore()
        defer { fixture.close() }
        let store = fixture.maintenance
        _ = try await store.registerDevice(DeviceRegistration(userId: "ann", deviceId: "phone", pushToken: .set(apnsToken(1))))
        // Above the test process's own, which a thread may always take.
        let niceness = min(threadNiceness() + 5, 19)
        var configuration = DeliverySender.Configuration()
        configuration.threadNiceness = niceness
        configuration.abandonClaimsAtStart = fixture.isLMDB
        let probe = NicenessProbe()
        let providers = DeliveryProviders([probe])
        let intake = NotificationIntake(registry: store, deliveries: store, clock: fixture.clock, capabilities: providers.capabilities)
        let request = NotificationRequest(target: .user("ann"), appId: "default", pushType: .alert,
                                          payload: Array(SenderHarness.apnsPayload.utf8), fcm: nil, priority: 10,
                                          expiration: fixture.clock.now().adding(seconds: 3600), collapseId: nil,
                                          idempotencyKey: nil, digest: [])
        let outcome = try await intake.accept(request)
        guard case .accepted(let accepted) = outcome else {
            Issue.record("not accepted: \(outcome)")
            return
        }
        let sender = DeliverySender(configuration: configuration, store: store, registry: store, providers: providers,
                                    observer: RecordingObserver(), clock: fixture.clock)
        try sender.start()
        let deadline = ContinuousClock.now + .seconds(10)
        while try await store.notification(id: accepted.id)?.isFinished != true, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        await offThePool { sender.stop() }
        #expect(try await store.notification(id: accepted.id)?.counts[.delivered] == 1)
        #expect(probe.seen == [niceness, niceness])
    }
}

/// The calling thread's nice value (Linux keeps one per thread; `who` 0 is the calling thread).
private func threadNiceness() -> Int32 {
    getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
}

/// An APNs provider that delivers everything and records the nice value of
/// the thread its `send` runs on, before the request and after its answer.
private final class NicenessProbe: DeliveryProvider {
    let platform = Platform.apns
    let appIds: Set<String> = ["default"]
    let credentialRenewals = 0
    private let niceness = Mutex<[Int32]>([])

    var seen: [Int32] { niceness.withLock { $0 } }

    func send(_ claimed: ClaimedDelivery, observer: any DeliveryObserver, stillWanted: @escaping StillWanted) async -> ProviderOutcome {
        niceness.withLock { $0.append(threadNiceness()) }
        // Answered from a thread of its own, as an HTTP/2 client's completion is.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread { continuation.resume() }.start()
        }
        niceness.withLock { $0.append(threadNiceness()) }
        return ProviderOutcome(.delivered(messageId: nil, correctedEnvironment: nil), status: 200, requests: 1)
    }

    func start() throws {}
    func stop(grace: Duration) {}
}
