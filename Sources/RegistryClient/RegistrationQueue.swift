/// Turns the desired state into the fewest requests that get the server there.
///
/// - Coalesces: it reads the latest state when it runs, and after the first
///   fact of a burst waits `coalescingWindow` before sending, so a burst of
///   facts costs one request.
/// - Single-flight: at most one request of the current session is in flight
///   (the token deletes carry no sequence, so two of one session in flight
///   could land reversed); resources go in `RegistryResource` order.
/// - Skips what the server already holds. That knowledge lives in memory
///   only and expires after `refreshInterval`, so a fresh process sends once
///   and a long-lived one re-registers: this is how a registration the server
///   lost (sweep, restore) comes back, and how `lastSeenAt` stays alive.
/// - Stamps every ordered write with a fresh `sequence`, so a request that
///   lands late is refused by the server instead of undoing a newer one.
/// - Pauses after transient failures (one gate for the whole server: a 503
///   or 429 is about the server, not one resource), and remembers a permanent
///   rejection for that exact payload, so only a new state or a new session
///   sends again.
/// - On sign-out, abandons the old session's request and knowledge, sends its
///   sequenced delete at once, and holds the next session's requests until
///   that delete has been answered or `signOutGrace` has passed, so the old
///   user's late register cannot take the push token back from the new user
///   and a delete that cannot get through never blocks the next user.
actor RegistrationQueue {
    /// What the queue believes the server holds for one resource.
    struct Known {
        var payload: Payload
        var confirmedAt: ContinuousClock.Instant
    }

    /// The current session's request in flight.
    struct InFlight {
        var id: UInt64
        var resource: RegistryResource
        var payload: Payload?
        var task: Task<Void, Never>
    }

    /// A retired session's delete, waiting or in flight; `sequence` names it.
    struct PendingDelete {
        var retired: RetiredSession
        var queuedAt: ContinuousClock.Instant
        var task: Task<Void, Never>?

        var sequence: UInt64 { retired.signOut.sequence }
    }

    /// 409s in a row for one payload before it counts as refused. The first
    /// is retried at once with a sequence above the one the server shows for
    /// the device (another install with this id, or a lost counter and a
    /// clock behind); a repeat means a fight not worth having until the state
    /// changes.
    static let conflictLimit = 2

    let inbox: Inbox
    let transport: any RegistryTransport
    let clock: any RegistryClock
    let configuration: RegistryClient.Configuration
    let events: EventSink

    var desired: DesiredState
    var seenVersion: UInt64 = 0
    var epoch: UInt64?
    var known: [RegistryResource: Known] = [:]
    var refused: [RegistryResource: Payload] = [:]
    var conflicts: [RegistryResource: (payload: Payload?, count: Int)] = [:]
    var current: InFlight?
    var deletes: [PendingDelete] = []
    var nextId: UInt64 = 0

    var failures = 0
    var notBefore: ContinuousClock.Instant?
    var holdUntil: ContinuousClock.Instant?
    var timer: (id: UInt64, deadline: ContinuousClock.Instant, task: Task<Void, Never>)?
    var idleWaiters: [CheckedContinuation<Void, Never>] = []
    var signOutWaiters: [UInt64: [CheckedContinuation<SignOutResult, Never>]] = [:]
    var signOutResults: [UInt64: SignOutResult] = [:]
    var closed = false

    init(inbox: Inbox, transport: any RegistryTransport, clock: any RegistryClock,
         configuration: RegistryClient.Configuration, events: EventSink) {
        self.inbox = inbox
        self.events = events
        self.transport = transport
        self.clock = clock
        self.configuration = configuration
        desired = inbox.state
    }

    /// A fact changed or a trigger fired: look again.
    func wake() { pump(flush: false) }

    /// Sends what is pending now, without waiting out the coalescing window,
    /// and returns once nothing is in flight: the server holds the desired
    /// state, or what remains waits for a backoff or a change of state.
    func flush() async {
        while !closed {
            pump(flush: true)
            guard isBusy else { return }
            await withCheckedContinuation { idleWaiters.append($0) }
        }
    }

    /// Abandons everything: in-flight requests are cancelled, timers stopped.
    func close() {
        closed = true
        current?.task.cancel()
        for pending in deletes { pending.task?.cancel() }
        timer?.task.cancel()
        current = nil
        deletes = []
        timer = nil
        resumeIdleWaiters()
        for waiters in signOutWaiters.values { for waiter in waiters { waiter.resume(returning: .pending) } }
        signOutWaiters = [:]
    }

    /// Waits until sign-out `sequence` is answered or `timeout` passes.
    func waitForSignOut(_ sequence: UInt64, timeout: Duration) async -> SignOutResult {
        if let result = signOutResults[sequence] { return result }
        guard !closed else { return .pending }
        let clock = self.clock, deadline = clock.now.advanced(by: timeout)
        let timeoutTask = Task { [weak self] in
            do { try await clock.sleep(until: deadline) } catch { return }
            await self?.resolveSignOut(sequence, .pending, forget: false)
        }
        defer { timeoutTask.cancel() }
        return await withCheckedContinuation { signOutWaiters[sequence, default: []].append($0) }
    }

    /// Answers those waiting on sign-out `sequence`; a final result is kept
    /// for a waiter that comes later.
    func resolveSignOut(_ sequence: UInt64, _ result: SignOutResult, forget: Bool = true) {
        if forget { signOutResults[sequence] = result }
        for waiter in signOutWaiters.removeValue(forKey: sequence) ?? [] { waiter.resume(returning: result) }
    }

    /// Whether the next session still waits for an old session's delete:
    /// only while one is younger than `signOutGrace`.
    func waitingForSignOut(now: ContinuousClock.Instant) -> Bool {
        deletes.contains { now < $0.queuedAt.advanced(by: configuration.signOutGrace) }
    }

    var isBusy: Bool { current != nil || deletes.contains { $0.task != nil } }

    /// The one place that starts work: reads the inbox, starts every request
    /// that may go now, and arms the timer for the next that may go later.
    func pump(flush: Bool) {
        guard !closed else { return }
        let now = clock.now
        absorbInbox(now: now)
        if flush { holdUntil = nil }
        if let hold = holdUntil, now >= hold { holdUntil = nil }
        let gateOpen = notBefore.map { now >= $0 } ?? true
        if gateOpen {
            notBefore = nil
            for index in deletes.indices where deletes[index].task == nil { startDelete(at: index) }
            if current == nil, !waitingForSignOut(now: now), holdUntil == nil,
               let (resource, payload) = nextWork(now: now) {
                start(resource, payload)
            }
        }
        if !isBusy { resumeIdleWaiters() }
        armTimer(now: now)
    }

    /// Takes the app's latest facts. A new session epoch (sign-in, sign-out,
    /// account switch) drops everything known, refused or in flight for the
    /// old one.
    private func absorbInbox(now: ContinuousClock.Instant) {
        let (state, version, retired) = inbox.take()
        for session in retired { deletes.append(PendingDelete(retired: session, queuedAt: now)) }
        guard version != seenVersion else { return }
        seenVersion = version
        desired = state
        if holdUntil == nil, configuration.coalescingWindow > .zero {
            holdUntil = now.advanced(by: configuration.coalescingWindow)
        }
        guard state.session?.epoch != epoch else { return }
        epoch = state.session?.epoch
        known = [:]
        refused = [:]
        conflicts = [:]
        current?.task.cancel()
        current = nil
    }

    /// The first resource, in `RegistryResource` order, whose server state differs
    /// from the desired one (or is too old to trust), unless that exact
    /// payload was refused.
    func nextWork(now: ContinuousClock.Instant) -> (RegistryResource, Payload?)? {
        let targets = desired.targets
        for resource in Set(targets.keys).union(known.keys).sorted() {
            guard let wanted = targets[resource] else { return (resource, nil) }
            if refused[resource] == wanted { continue }
            if let held = known[resource], held.payload == wanted,
               now < held.confirmedAt.advanced(by: configuration.refreshInterval) { continue }
            return (resource, wanted)
        }
        return nil
    }

    /// One timer for the earliest future moment something may change: the
    /// end of the coalescing window, of a backoff, of a sign-out's grace, or
    /// of a piece of knowledge. Moments already past are the next completion's business
    /// (a timer for them would fire in a loop while a request is in flight).
    private func armTimer(now: ContinuousClock.Instant) {
        var deadlines: [ContinuousClock.Instant] = []
        if let holdUntil { deadlines.append(holdUntil) }
        if let notBefore { deadlines.append(notBefore) }
        for pending in deletes { deadlines.append(pending.queuedAt.advanced(by: configuration.signOutGrace)) }
        for held in known.values { deadlines.append(held.confirmedAt.advanced(by: configuration.refreshInterval)) }
        guard let deadline = deadlines.filter({ $0 > now }).min() else {
            timer?.task.cancel()
            timer = nil
            return
        }
        if timer?.deadline == deadline { return }
        timer?.task.cancel()
        nextId += 1
        let id = nextId
        let clock = self.clock
        timer = (id, deadline, Task { [weak self] in
            do { try await clock.sleep(until: deadline) } catch { return }
            await self?.timerFired(id)
        })
    }

    private func timerFired(_ id: UInt64) {
        if timer?.id == id { timer = nil }
        pump(flush: false)
    }

    private func resumeIdleWaiters() {
        let waiters = idleWaiters
        idleWaiters = []
        for waiter in waiters { waiter.resume() }
    }
}
