import APNs
import Foundation
import JSON
import RegistryCore
import RegistryDelivery
import RegistryTestSupport
import RegistrydTestSupport
import APNsTestSupport
import Synchronization

/// A store (the test backend), a fake APNs and a sender between them, for
/// one test; `stop()` takes them down.
final class SenderHarness: @unchecked Sendable {
    let fixture: StoreFixture
    let fake: FakeAPNs
    let observer = RecordingObserver()
    private(set) var sender: DeliverySender?
    var store: any RegistryMaintenance { fixture.maintenance }

    private var ticking: Task<Void, Never>?

    init(script: String = #"{"tokens": {}}"#) async throws {
        fixture = try makeStore()
        fake = try await FakeAPNs.start(script: script)
        // The store's test clock moves with real time, so retries fall due as they would.
        let clock = fixture.clock
        ticking = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(20))
                clock.advance(milliseconds: 20)
            }
        }
    }

    /// Starts a sender (a new one each time: as a restarted server would).
    func startSender(topics: [String: String] = ["default": FakeAPNs.topic], timeout: Duration = .seconds(5),
                     configure: (inout DeliverySender.Configuration) -> Void = { _ in }) throws {
        let tokens = try fake.tokens()
        let client = try APNsClient(configuration: fake.configuration(timeout: timeout), tokens: tokens)
        var configuration = DeliverySender.Configuration()
        configuration.pollInterval = .milliseconds(50)
        configuration.abandonClaimsAtStart = fixture.isLMDB
        configure(&configuration)
        let providers = DeliveryProviders([APNsProvider(client: client, tokens: tokens, topics: topics)])
        let sender = DeliverySender(configuration: configuration, store: store, registry: store, providers: providers,
                                    observer: observer, clock: fixture.clock)
        try sender.start()
        self.sender = sender
    }

    func stopSender() async {
        guard let sender else { return }
        await offThePool { sender.stop() }
        self.sender = nil
    }

    func stop() async {
        ticking?.cancel()
        await stopSender()
        await fake.stop()
        fixture.close()
    }

    /// Accepts a notification as the route would.
    func notify(_ target: NotificationTarget, pushType: PushType = .alert, collapseId: String? = nil,
                expiration: Timestamp? = nil) async throws -> NotificationRecord {
        let request = NotificationRequest(target: target, appId: "default", pushType: pushType,
                                          payload: Array(#"{"aps":{"alert":"Goal!"}}"#.utf8), priority: 10,
                                          expiration: expiration ?? fixture.clock.now().adding(seconds: 3600),
                                          collapseId: collapseId, idempotencyKey: nil, digest: [])
        guard case .accepted(let notification) = try await NotificationIntake(registry: store, deliveries: store, clock: fixture.clock)
            .accept(request) else { throw FakeAPNsError("not accepted") }
        sender?.notify()
        return notification
    }

    /// Waits (up to `seconds`) until no delivery of the notification is queued or sending.
    func settled(_ id: String, seconds: Double = 10) async throws -> (NotificationRecord, [DeliveryRecord]) {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let notification = try await store.notification(id: id)!
            if notification.counts.isFinished || Date() > deadline {
                return (notification, try await store.deliveries(notificationId: id, from: 0, limit: 1000))
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// What the sender reported, for assertions.
final class RecordingObserver: DeliveryObserver {
    private struct State {
        var requests: [String] = []
        var problems: [String] = []
        var errors: [String] = []
        var removals: [String] = []
    }

    private let state = Mutex(State())

    var requests: [String] { state.withLock { $0.requests } }
    var problems: [String] { state.withLock { $0.problems } }
    var errors: [String] { state.withLock { $0.errors } }
    var removals: [String] { state.withLock { $0.removals } }

    func providerRequest(_ provider: Platform, status: Int?, reason: String?, outcome: String, seconds: Double) {
        state.withLock { $0.requests.append(status.map { "\($0)\(reason.map { " " + $0 } ?? "")" } ?? outcome) }
    }
    func settled(_ settlement: DeliverySettlement, of claimed: ClaimedDelivery) {}
    func abandoned(_ count: Int) {}
    func credentialRenewed(_ provider: Platform) {}
    func configurationProblem(_ provider: Platform, reason: String, appId: String, detail: String?) { state.withLock { $0.problems.append(reason) } }
    func senderError(_ what: String, _ error: any Error) { state.withLock { $0.errors.append("\(what): \(error)") } }
    func queue(_ stats: DeliveryQueueStats, now: Timestamp) {}
    func tokensRemoved(_ count: Int, reason: FeedbackReason) { state.withLock { $0.removals.append("\(reason.rawValue) \(count)") } }
}
