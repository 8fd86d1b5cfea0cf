import Foundation

/// Sending one request and learning from its answer.
extension RegistrationQueue {
    /// Sends the current session's request for `resource`. The sequence is
    /// stamped here, in the inbox, and only while the session is current, so
    /// stamps follow the queue's decisions and a sign-out's delete is stamped
    /// after every register it must beat.
    func start(_ resource: RegistryResource, _ payload: Payload?) {
        guard let session = desired.session else { return }
        let operation = RegistryOperation(resource: resource, payload: payload)
        var sequence: UInt64?
        if operation.isSequenced {
            guard let stamped = inbox.stamp(epoch: session.epoch) else { return }
            sequence = stamped
        }
        nextId += 1
        let id = nextId
        let (deviceId, appId, inbox) = (desired.deviceId, desired.appId, inbox)
        let task = Task {
            guard let bearer = try? await session.credentials() else { return finished(id, .credentialUnavailable) }
            inbox.remember(bearer, epoch: session.epoch)
            let outcome = await send(operation, bearer: bearer, deviceId: deviceId, appId: appId, sequence: sequence)
            if outcome == .stale, !Task.isCancelled,
               let stored = await storedSequence(bearer: bearer, deviceId: deviceId, appId: appId) {
                inbox.raise(past: stored)
            }
            finished(id, outcome)
        }
        current = InFlight(id: id, resource: resource, payload: payload, task: task)
    }

    /// Sends a retired session's delete with the sequence stamped at sign-out
    /// (a retry reuses it, so it can never delete a later session's
    /// registration). The credential is the one obtained at sign-out time:
    /// the session's provider is asked once, on the first attempt, and its
    /// answer is kept unless it fails or names another user; then the last
    /// credential the session had is used. With neither, the delete ends.
    func startDelete(at index: Int) {
        let pending = deletes[index]
        deletes[index].retired.credentials = nil
        let inbox = self.inbox
        deletes[index].task = Task {
            let signOut = pending.retired.signOut
            var bearer = signOut.credential
            if let ask = pending.retired.credentials, let fresh = try? await ask(),
               BearerSubject.allows(fresh, for: signOut.userId) {
                bearer = fresh
            }
            guard let bearer else { return finishedDelete(signOut.sequence, .credentialUnavailable) }
            if let failure = inbox.pin(bearer, signOut: signOut.sequence) { notSaved(failure) }
            let outcome = await send(.signOut, bearer: bearer, deviceId: signOut.deviceId, appId: signOut.appId,
                                     sequence: signOut.sequence)
            finishedDelete(signOut.sequence, outcome)
        }
    }

    /// Runs off the actor: sends and classifies. A thrown error (no network,
    /// cancelled) is transient.
    nonisolated func send(_ operation: RegistryOperation, bearer: String, deviceId: String, appId: String?,
                          sequence: UInt64?) async -> Outcome {
        do {
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
    nonisolated func storedSequence(bearer: String, deviceId: String, appId: String?) async -> UInt64? {
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
            if conflicts.removeValue(forKey: resource) != nil { events.emit(.conflictResolved(resource)) }
            events.emit(.applied(resource))
            if let payload = request.payload {
                known[resource] = Known(payload: payload, confirmedAt: clock.now)
            } else {
                known[resource] = nil
            }
        case .transient(let retryAfter):
            failed(retryAfter: retryAfter, cause: .unavailable)
        case .unauthenticated:
            failed(retryAfter: nil, cause: .unauthenticated)
        case .credentialUnavailable:
            failed(retryAfter: nil, cause: .credentialUnavailable)
        case .stale:
            // Sent again by the next pump with a fresh sequence, if still wanted.
            let count = conflicts[resource].map { $0.payload == request.payload ? $0.count + 1 : 1 } ?? 1
            conflicts[resource] = (request.payload, count)
            if count >= Self.conflictLimit {
                give(up: resource, request.payload)
                events.emit(.refused(resource, status: 409, reason: "stale_write"))
            }
        case .rejected(let status, let reason):
            give(up: resource, request.payload)
            events.emit(.refused(resource, status: status, reason: reason))
        }
        pump(flush: false)
    }

    /// A retired session's answer. Only transient failures are tried again.
    /// Anything else ends the attempt, since the session is gone and cannot
    /// send anything better: a 409 (the server holds a newer write for that
    /// user and device) counts as delivered; a refused or missing credential,
    /// or another 4xx, gives up, and the server's TTL or the push token's
    /// next owner settles what it held.
    func finishedDelete(_ sequence: UInt64, _ outcome: Outcome) {
        guard let index = deletes.firstIndex(where: { $0.sequence == sequence }) else { return pump(flush: false) }
        switch outcome {
        case .transient(let retryAfter):
            deletes[index].task = nil
            failed(retryAfter: retryAfter, cause: .unavailable)
        case .applied, .stale:
            if outcome == .applied { succeeded() }
            settle(index, .delivered)
            events.emit(.signOutDelivered)
        case .unauthenticated:
            settle(index, .gaveUp)
            events.emit(.signOutGivenUp(status: 401))
        case .credentialUnavailable:
            settle(index, .gaveUp)
            events.emit(.signOutGivenUp(status: nil))
        case .rejected(let status, _):
            settle(index, .gaveUp)
            events.emit(.signOutGivenUp(status: status))
        }
        pump(flush: false)
    }

    private func settle(_ index: Int, _ result: SignOutResult) {
        let sequence = deletes.remove(at: index).sequence
        if let failure = inbox.settle(signOut: sequence) { notSaved(failure) }
        resolveSignOut(sequence, result)
    }

    /// A refused payload is not sent again until the state changes; a refused
    /// delete is forgotten (the server will expire what it holds).
    private func give(up resource: RegistryResource, _ payload: Payload?) {
        if let payload { refused[resource] = payload } else { known[resource] = nil }
    }

    private func succeeded() {
        failures = 0
        notBefore = nil
    }

    private func failed(retryAfter: Duration?, cause: RegistryEvent.BackoffCause) {
        failures += 1
        let delay = configuration.retryPolicy.delay(afterFailures: failures, retryAfter: retryAfter,
                                                    random: configuration.jitter)
        let until = clock.now.advanced(by: delay)
        let (seconds, attoseconds) = (max(notBefore ?? until, until) - clock.now).components
        notBefore = max(notBefore ?? until, until)
        events.emit(.backingOff(until: clock.date.addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18),
                                cause: cause))
    }

    func notSaved(_ failure: any Error) {
        events.emit(.signOutNotSaved(error: String(describing: failure)))
    }
}
