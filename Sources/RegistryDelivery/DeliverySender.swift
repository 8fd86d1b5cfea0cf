import Foundation
import Lifecycle
import RegistryCore
import Synchronization

/// Sends the queue's deliveries through their providers (docs/delivery.md):
/// claims due deliveries in batches, hands each to the provider of its
/// platform (`DeliveryProvider`), decides by `DeliveryRules` what the
/// outcome means, applies it to the registry (removals, environment
/// corrections) and settles each delivery.
///
/// A `Service` of `serve`'s group, started only when a provider is
/// configured, after the store and before the HTTP server; stopped in
/// order: no new claims, requests in flight get `stopGrace` to be answered
/// (then they are `unknown`), every settlement is written before `stop`
/// returns.
///
/// Its own work (claims, expansion, the delivery rules, the providers'
/// requests and their answers, settlement) runs on threads of its own
/// (`ThreadExecutor`), not on Swift's cooperative pool, which the API's
/// requests share: at a higher nice value, a fan-out that meets the API on
/// a busy machine slows instead of the API's answers.
public final class DeliverySender: Service {
    public struct Configuration: Sendable {
        /// Deliveries claimed and not yet settled, at most.
        public var maxInFlight = 4000
        /// Deliveries claimed per transaction, at most.
        public var claimBatch = 250
        /// Activity tokens resolved per page of a notification still being
        /// expanded (one transaction each), and such notifications taken per turn.
        public var expansionPageSize = NotificationIntake.defaultPageSize
        public var expansionsPerTurn = 8
        /// How often an idle sender looks for due deliveries (an accepted
        /// notification wakes it at once; another node's does not).
        public var pollInterval: Duration = .milliseconds(250)
        /// A `sending` claim older than this is a dead node's: `unknown`.
        public var abandonAfter: Duration = .seconds(120)
        /// A single-process store (LMDB): every `sending` claim found at start
        /// is a dead process's, and becomes `unknown` at once.
        public var abandonClaimsAtStart = false
        /// Notifications are kept this long after they were created (then swept, once final).
        public var keepNotifications: Duration = .seconds(7 * 24 * 3600)
        public var stopGrace: Duration = .seconds(5)
        /// The sender's threads. Two keep up with the providers' HTTP/2
        /// client threads, which do about a third of a fan-out's work.
        public var threads = 2
        /// Their nice value (`ThreadNiceness`); 0 keeps the process's.
        /// registryd gives them the HTTP/2 client threads' value.
        public var threadNiceness: Int32 = 0

        public init() {}
    }

    public let name = "delivery-sender"
    let configuration: Configuration
    let store: any DeliveryStore
    let registry: any RegistryStore
    let providers: DeliveryProviders
    let observer: any DeliveryObserver
    let clock: any WallClock
    let settlements: SettlementBatcher
    let wake = WakeSignal()
    private let executor: ThreadExecutor
    private let stopping = Atomic<Bool>(false)
    private let inFlight = Atomic<Int>(0)
    private let finished = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)

    public init(configuration: Configuration, store: any DeliveryStore, registry: any RegistryStore,
                providers: DeliveryProviders, observer: any DeliveryObserver, clock: any WallClock = SystemClock()) {
        self.configuration = configuration
        self.store = store
        self.registry = registry
        self.providers = providers
        self.observer = observer
        self.clock = clock
        settlements = SettlementBatcher(store: store, observer: observer)
        executor = ThreadExecutor(name: "delivery", threads: configuration.threads, niceness: configuration.threadNiceness)
    }

    /// Starts the providers' connections, the sender's threads and the claim loop on them.
    public func start() throws {
        for provider in providers.byPlatform.values { try provider.start() }
        started.store(true, ordering: .sequentiallyConsistent)
        executor.start()
        Task.detached(executorPreference: executor) { [self] in
            await run()
            finished.signal()
        }
    }

    /// Claims now rather than at the next poll (a notification was accepted).
    public func notify() { wake.signal() }

    public func stop() {
        guard started.exchange(false, ordering: .sequentiallyConsistent) else { return }
        stopping.store(true, ordering: .sequentiallyConsistent)
        settlements.stopRetrying()
        wake.signal()
        // In-flight requests get the grace period, then complete as uncertain: the loop settles them.
        for provider in providers.byPlatform.values { provider.stop(grace: configuration.stopGrace) }
        finished.wait()
        executor.stop()
    }

    private var isStopping: Bool { stopping.load(ordering: .sequentiallyConsistent) }

    private func run() async {
        if configuration.abandonClaimsAtStart {
            await abandon(claimedBefore: Timestamp(milliseconds: .max))
        }
        var maintenance = Maintenance(now: ContinuousClock.now)
        // Discarding: a plain task group keeps every finished child until its
        // result is taken, about 7.5 KB a delivery for as long as the sender runs.
        await withDiscardingTaskGroup { group in
            while !isStopping {
                let expanded = await expandPending()
                let wanted = min(configuration.maxInFlight - inFlight.load(ordering: .relaxed), configuration.claimBatch)
                var claimed: [ClaimedDelivery] = []
                var taken = 0
                if wanted > 0 {
                    do {
                        let batch = try await store.claimBatch(limit: wanted)
                        claimed = batch.claimed
                        taken = batch.claimed.count + batch.decided.count
                        for delivery in batch.decided { observer.decidedAtClaim(delivery) }
                    } catch {
                        observer.senderError("claim", error)
                    }
                }
                for delivery in claimed {
                    inFlight.add(1, ordering: .relaxed)
                    group.addTask { [self] in
                        await deliver(delivery)
                        // Room for more claims: only worth a wake-up when the loop stopped for lack of it.
                        if inFlight.subtract(1, ordering: .relaxed).oldValue == configuration.maxInFlight { wake.signal() }
                    }
                }
                await maintenance.run(self)
                // Fewer than asked for: nothing more is due (or there is no room), so wait for a wake-up.
                if taken < wanted && expanded == 0 {
                    await wake.wait(upTo: configuration.pollInterval)
                }
            }
        }
        await settlements.flush()
    }

    /// Adds one page of deliveries to each of a few notifications whose
    /// activity is still being resolved (oldest first); how many pages it
    /// added. A page another node added first, or a notification cancelled
    /// meanwhile, is dropped by the store and adds nothing.
    private func expandPending() async -> Int {
        let pending: [NotificationRecord]
        do {
            pending = try await store.pendingExpansions(limit: configuration.expansionsPerTurn)
        } catch {
            observer.senderError("read notifications to expand", error)
            return 0
        }
        var added = 0
        for notification in pending {
            guard let expansion = notification.expansion else { continue }
            do {
                let page = try await NotificationIntake.activityPage(registry, activity: expansion.activityId, appId: notification.appId,
                                                                     cursor: expansion.cursor, limit: configuration.expansionPageSize)
                let deliveries = notification.deliveries(for: page.tokens, from: 0, capabilities: providers.capabilities,
                                                         now: clock.now())
                if try await store.expand(notification.id, from: expansion.cursor, adding: deliveries, next: page.next) { added += 1 }
            } catch {
                observer.senderError("expand notification \(notification.id)", error)
            }
        }
        return added
    }

    func abandon(claimedBefore cutoff: Timestamp) async {
        var abandoned = 0
        do {
            while case let count = try await store.abandonClaims(claimedBefore: cutoff), count > 0 { abandoned += count }
        } catch {
            observer.senderError("abandon stale claims", error)
        }
        if abandoned > 0 { observer.abandoned(abandoned) }
    }

    /// What the loop does besides claiming: queue stats for metrics once a
    /// second, stale claims every 10 seconds, the sweep of old
    /// notifications every minute, credential renewals for metrics.
    private struct Maintenance {
        var nextStats: ContinuousClock.Instant
        var nextAbandon: ContinuousClock.Instant
        var nextSweep: ContinuousClock.Instant
        var renewalsSeen: [Platform: Int] = [:]

        init(now: ContinuousClock.Instant) {
            nextStats = now
            nextAbandon = now
            nextSweep = now
        }

        mutating func run(_ sender: DeliverySender) async {
            let now = ContinuousClock.now
            for (platform, provider) in sender.providers.byPlatform {
                let renewals = provider.credentialRenewals
                while renewalsSeen[platform, default: 0] < renewals {
                    renewalsSeen[platform, default: 0] += 1
                    sender.observer.credentialRenewed(platform)
                }
            }
            if now >= nextStats {
                nextStats = now + .seconds(1)
                do {
                    sender.observer.queue(try await sender.store.queueStats(), now: sender.clock.now())
                } catch {
                    sender.observer.senderError("queue stats", error)
                }
            }
            if now >= nextAbandon {
                nextAbandon = now + .seconds(10)
                await sender.abandon(claimedBefore: sender.clock.now().subtracting(sender.configuration.abandonAfter))
            }
            if now >= nextSweep {
                nextSweep = now + .seconds(60)
                do {
                    let cutoff = sender.clock.now().subtracting(sender.configuration.keepNotifications)
                    while try await sender.store.sweepNotifications(createdBefore: cutoff) > 0 {}
                } catch {
                    sender.observer.senderError("sweep notifications", error)
                }
            }
        }
    }
}
