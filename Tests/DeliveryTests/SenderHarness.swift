import APNs
import FCM
import Foundation
import JSON
import RegistryCore
import RegistryDelivery
import RegistryTestSupport
import RegistrydTestSupport
import APNsTestSupport
import Synchronization

/// A store (the test backend), a fake APNs (and, when given a script, a
/// fake FCM) and a sender between them, for one test; `stop()` takes them
/// down.
final class SenderHarness: Stoppable, @unchecked Sendable {
    let fixture: StoreFixture
    let fake: FakeAPNs
    let fakeFCM: FakeFCM?
    let observer = RecordingObserver()
    private(set) var sender: DeliverySender?
    /// Which platforms the running sender can send, as the routes would accept with.
    private(set) var capabilities = DeliveryCapabilities(everyApp: [.apns])
    var store: any RegistryMaintenance { fixture.maintenance }
    /// The store as the sender sees it: `settle` can be made to fail.
    let senderStore: SettleOutageStore

    private var ticking: Task<Void, Never>?

    init(script: String = #"{"tokens": {}}"#, fcmScript: String? = nil) async throws {
        fixture = try makeStore()
        senderStore = SettleOutageStore(fixture.maintenance)
        fake = try await FakeAPNs.start(script: script)
        if let fcmScript { fakeFCM = try await FakeFCM.start(script: fcmScript) } else { fakeFCM = nil }
        // The store's test clock moves with real time, so retries fall due as they would.
        let clock = fixture.clock
        ticking = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(20))
                clock.advance(milliseconds: 20)
            }
        }
    }

    /// Starts a sender (a new one each time: as a restarted server would),
    /// with the FCM provider too when the harness has a fake FCM (`fcmApps`
    /// hold its service account).
    func startSender(topics: [String: String] = ["default": FakeAPNs.topic], timeout: Duration = .seconds(5),
                     fcmApps: [String] = ["default"],
                     configure: (inout DeliverySender.Configuration) -> Void = { _ in }) throws {
        let tokens = try fake.tokens()
        let client = try APNsClient(configuration: fake.configuration(timeout: timeout), tokens: tokens)
        var configuration = DeliverySender.Configuration()
        configuration.pollInterval = .milliseconds(50)
        configuration.abandonClaimsAtStart = fixture.isLMDB
        configure(&configuration)
        var list: [any DeliveryProvider] = [APNsProvider(client: client, topics: topics)]
        if let fakeFCM {
            let account = try ServiceAccount(contentsOf: fakeFCM.serviceAccountFile)
            list.append(try FCMProvider(configuration: FCMConfiguration(fcmURL: fakeFCM.baseURL, tokenURL: fakeFCM.tokenURL,
                                                                         caFile: fakeFCM.caFile, requestTimeout: timeout),
                                        accounts: Dictionary(uniqueKeysWithValues: fcmApps.map { ($0, account) }),
                                        clock: fixture.clock))
        }
        let providers = DeliveryProviders(list)
        capabilities = providers.capabilities
        let sender = DeliverySender(configuration: configuration, store: senderStore, registry: store, providers: providers,
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
        await fakeFCM?.stop()
        fixture.close()
    }

    static let apnsPayload = #"{"aps":{"alert":"Goal!"}}"#

    /// Accepts a notification as the route would (with the running sender's
    /// capabilities): `payload` for APNs tokens, `fcm` for FCM ones.
    func notify(_ target: NotificationTarget, pushType: PushType = .alert, collapseId: String? = nil,
                expiration: Timestamp? = nil, appId: String = "default", payload: String? = apnsPayload,
                fcm: String? = nil, pageSize: Int = NotificationIntake.defaultPageSize) async throws -> NotificationRecord {
        let request = NotificationRequest(target: target, appId: appId, pushType: pushType,
                                          payload: payload.map { Array($0.utf8) }, fcm: fcm.map { Array($0.utf8) }, priority: 10,
                                          expiration: expiration ?? fixture.clock.now().adding(seconds: 3600),
                                          collapseId: collapseId, idempotencyKey: nil, digest: [])
        let intake = NotificationIntake(registry: store, deliveries: store, clock: fixture.clock, capabilities: capabilities,
                                        pageSize: pageSize)
        guard case .accepted(let notification) = try await intake.accept(request) else { throw TestFailure("not accepted") }
        sender?.notify()
        return notification
    }

    /// Waits (up to `seconds`) until no delivery of the notification is queued or sending.
    func settled(_ id: String, seconds: Double = 10) async throws -> (NotificationRecord, [DeliveryRecord]) {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let notification = try await store.notification(id: id)!
            if notification.isFinished || Date() > deadline {
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
        var fcmRequests: [String] = []
        var problems: [String] = []
        var errors: [String] = []
        var removals: [String] = []
        var decided: [String] = []
    }

    private let state = Mutex(State())

    /// APNs's answers, as `status reason` (or the outcome when unanswered).
    var requests: [String] { state.withLock { $0.requests } }
    /// FCM's, the same way.
    var fcmRequests: [String] { state.withLock { $0.fcmRequests } }
    var problems: [String] { state.withLock { $0.problems } }
    var errors: [String] { state.withLock { $0.errors } }
    var removals: [String] { state.withLock { $0.removals } }
    /// What claims decided without a request: each delivery's reason (or state).
    var decided: [String] { state.withLock { $0.decided } }

    func providerRequest(_ provider: Platform, status: Int?, reason: String?, outcome: String, seconds: Double) {
        let line = status.map { "\($0)\(reason.map { " " + $0 } ?? "")" } ?? outcome
        state.withLock { state in
            if provider == .apns { state.requests.append(line) } else { state.fcmRequests.append(line) }
        }
    }
    func settled(_ settlement: DeliverySettlement, of claimed: ClaimedDelivery) {}
    func decidedAtClaim(_ delivery: DeliveryRecord) { state.withLock { $0.decided.append(delivery.reason ?? delivery.state.rawValue) } }
    func abandoned(_ count: Int) {}
    func credentialRenewed(_ provider: Platform) {}
    func configurationProblem(_ provider: Platform, reason: String, appId: String, detail: String?) { state.withLock { $0.problems.append(reason) } }
    func senderError(_ what: String, _ error: any Error) { state.withLock { $0.errors.append("\(what): \(error)") } }
    func queue(_ stats: DeliveryQueueStats, now: Timestamp) {}
    func tokensRemoved(_ count: Int, reason: FeedbackReason) { state.withLock { $0.removals.append("\(reason.rawValue) \(count)") } }
}

/// Polls `condition` every 20 ms; fails with `what` after `seconds`.
func waitUntil(seconds: Double, _ what: String, _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw TestFailure("waited \(seconds) s for: \(what)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}
