import RegistryCore
import RegistryTestSupport
import Testing

/// Resolving a notification's target to deliveries, without a sender.
@Suite struct NotificationIntakeTests {
    /// The token cap holds for every kind of target, not only an activity's
    /// (1,000 users of up to 10,000 devices each could hold far more).
    @Test func everyTargetHoldsAtMostTheTokenCap() async throws {
        let f = try makeStore()
        defer { f.close() }
        for n in 1...3 {
            try await f.store.register("u\(n)", "d", token: n)
            try await f.store.registerActivity("m1", "u\(n)", "d", token: 100 + n)
        }
        let capped = NotificationIntake(registry: f.maintenance, deliveries: f.maintenance, clock: f.clock, maxDeliveries: 2)
        for target in [NotificationTarget.users(["u1", "u2", "u3"]), .activity("m1")] {
            let request = NotificationRequest(target: target, appId: "default", pushType: .alert, payload: Array("{}".utf8),
                                              priority: 10, expiration: nil, collapseId: nil, idempotencyKey: nil, digest: [])
            let error = await registryError { _ = try await capped.accept(request) }
            #expect(error == .invalidField(field: "target", message: "holds more than 2 tokens"), "\(target)")
        }
        #expect(try await f.maintenance.queueStats().queued == 0)
        let roomy = NotificationIntake(registry: f.maintenance, deliveries: f.maintenance, clock: f.clock, maxDeliveries: 3)
        let request = NotificationRequest(target: .users(["u1", "u2", "u3"]), appId: "default", pushType: .alert,
                                          payload: Array("{}".utf8), priority: 10, expiration: nil, collapseId: nil,
                                          idempotencyKey: nil, digest: [])
        guard case .accepted(let notification) = try await roomy.accept(request) else {
            Issue.record("not accepted")
            return
        }
        #expect(notification.counts[.queued] == 3)
    }
}
