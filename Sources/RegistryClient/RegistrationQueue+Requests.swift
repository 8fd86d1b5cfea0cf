import Foundation

/// Sending one request and learning from its answer.
extension RegistrationQueue {
    /// Sends the current session's request for `resource`. The sequence is
    /// stamped here, inside the actor, so stamps follow the queue's decisions
    /// and a sign-out's delete is stamped after every register it must beat.
    func start(_ resource: Resource, _ payload: Payload?) {
        guard let session = desired.session else { return }
        let operation = RegistryOperation(resource: resource, payload: payload)
        let sequence = operation.isSequenced ? sequences.next(at: clock.date) : nil
        nextId += 1
        let id = nextId
        let (deviceId, appId) = (desired.deviceId, desired.appId)
        let task = Task {
            let outcome = await send(operation, session: session, deviceId: deviceId, appId: appId, sequence: sequence)
            if outcome == .stale, !Task.isCancelled,
               let stored = await storedSequence(session: session, deviceId: deviceId, appId: appId) {
                sequences.raise(past: stored)
            }
            finished(id, outcome)
        }
        current = InFlight(id: id, resource: resource, payload: payload, task: task)
    }

    /// Sends a retired session's sequenced delete, with that session's
    /// credential. A retry gets a fresh sequence, which is still above every
    /// register of that session: none is stamped after it retired.
    func startDelete(at index: Int) {
        let pending = deletes[index]
        let sequence = sequences.next(at: clock.date)
        deletes[index].task = Task {
            let outcome = await send(.signOut, session: pending.retired.session, deviceId: pending.retired.deviceId,
                                     appId: pending.retired.appId, sequence: sequence)
            finishedDelete(pending.id, outcome)
        }
    }

    /// Runs off the actor: asks for a credential, sends, classifies. Any
    /// thrown error (no credential, no network, cancelled) is transient.
    nonisolated func send(_ operation: RegistryOperation, session: Session, deviceId: String, appId: String?,
                          sequence: UInt64?) async -> Outcome {
        do {
            let bearer = try await session.credentials()
            try Task.checkCancellation()
            let request = operation.request(deviceId: deviceId, appId: appId, sequence: sequence, bearer: bearer)
            return Outcome(try await transport.send(request), now: clock.date)
        } catch {
            return .transient(retryAfter: nil)
        }
    }

    /// The `sequence` the server holds for this device, read after a 409 so
    /// the retry can go above it. Nil when it cannot tell (no record, only a
    /// tombstone, any failure): then the retry's sequence is merely higher.
    nonisolated func storedSequence(session: Session, deviceId: String, appId: String?) async -> UInt64? {
        guard let bearer = try? await session.credentials() else { return nil }
        let request = RegistryOperation.readDevice.request(deviceId: deviceId, appId: appId, sequence: nil, bearer: bearer)
        guard let response = try? await transport.send(request), response.status == 200,
              let object = try? JSONSerialization.jsonObject(with: response.body) as? [String: Any],
              let device = object["device"] as? [String: Any] else { return nil }
        return (device["sequence"] as? NSNumber)?.uint64Value
    }

    /// The current session's answer. An answer for a request that is no
    /// longer current (its session ended) changes nothing: in particular a
    /// late register's 409 is not retried for a session that has gone.
    func finished(_ id: UInt64, _ outcome: Outcome) {
        guard let request = current, request.id == id else { return pump(flush: false) }
        current = nil
        let resource = request.resource
        switch outcome {
        case .applied:
            succeeded()
            conflicts[resource] = nil
            if let payload = request.payload {
                known[resource] = Known(payload: payload, confirmedAt: clock.now)
            } else {
                known[resource] = nil
            }
        case .transient(let retryAfter):
            failed(retryAfter: retryAfter)
        case .unauthenticated:
            failed(retryAfter: nil)
        case .stale:
            // Sent again by the next pump with a fresh sequence, if still wanted.
            let count = conflicts[resource].map { $0.payload == request.payload ? $0.count + 1 : 1 } ?? 1
            conflicts[resource] = (request.payload, count)
            if count >= Self.conflictLimit { give(up: resource, request.payload) }
        case .rejected:
            give(up: resource, request.payload)
        }
        pump(flush: false)
    }

    /// A retired session's answer. A refusal (409: the server holds a newer
    /// write for that user and device; 401 or another 4xx: that credential or
    /// id is not accepted) ends the attempt, since the session is gone and
    /// cannot send anything better, and the next session is waiting on it;
    /// only transient failures are tried again.
    func finishedDelete(_ id: UInt64, _ outcome: Outcome) {
        guard let index = deletes.firstIndex(where: { $0.id == id }) else { return pump(flush: false) }
        switch outcome {
        case .applied, .stale, .unauthenticated, .rejected:
            if outcome == .applied { succeeded() }
            deletes.remove(at: index)
        case .transient(let retryAfter):
            deletes[index].task = nil
            failed(retryAfter: retryAfter)
        }
        pump(flush: false)
    }

    /// A refused payload is not sent again until the state changes; a refused
    /// delete is forgotten (the server will expire what it holds).
    private func give(up resource: Resource, _ payload: Payload?) {
        if let payload { refused[resource] = payload } else { known[resource] = nil }
    }

    private func succeeded() {
        failures = 0
        notBefore = nil
    }

    private func failed(retryAfter: Duration?) {
        failures += 1
        let delay = configuration.retryPolicy.delay(afterFailures: failures, retryAfter: retryAfter,
                                                    random: configuration.jitter)
        let until = clock.now.advanced(by: delay)
        notBefore = max(notBefore ?? until, until)
    }
}
