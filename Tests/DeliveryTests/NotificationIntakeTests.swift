import RegistryCore
import RegistryTestSupport
import Testing

/// Resolving a notification's target to deliveries, without a sender.
@Suite struct NotificationIntakeTests {
    static func request(_ target: NotificationTarget) -> NotificationRequest {
        NotificationRequest(target: target, appId: "default", pushType: .liveactivity, payload: Array("{}".utf8), priority: 10,
                            expiration: nil, collapseId: nil, idempotencyKey: nil, digest: [])
    }

    /// Size never makes a target unsendable: an activity larger than a page
    /// is accepted with its first page of deliveries and the cursor of the
    /// rest, which `expand` adds page by page, numbered on.
    @Test func anActivityIsAcceptedWithItsFirstPageAndExpandedPageByPage() async throws {
        let f = try makeStore()
        defer { f.close() }
        for n in 1...5 { try await f.store.registerActivity("m1", "u\(n)", "d", token: 100 + n) }
        let intake = NotificationIntake(registry: f.maintenance, deliveries: f.maintenance, clock: f.clock, pageSize: 2)
        guard case .accepted(let accepted) = try await intake.accept(Self.request(.activity("m1"))) else {
            Issue.record("not accepted")
            return
        }
        #expect(accepted.counts[.queued] == 2 && accepted.expansion?.activityId == "m1" && !accepted.isFinished)
        var pages = 0
        while let pending = try await f.maintenance.pendingExpansions(limit: 10).first, let expansion = pending.expansion {
            let page = try await NotificationIntake.activityPage(f.maintenance, activity: "m1", appId: "default",
                                                                 cursor: expansion.cursor, limit: 2)
            let deliveries = pending.deliveries(for: page.tokens, from: 0, capabilities: DeliveryCapabilities(everyApp: [.apns]),
                                                now: f.clock.now())
            #expect(try await f.maintenance.expand(pending.id, from: expansion.cursor, adding: deliveries, next: page.next))
            // The same page again (another node's, late) is refused: the cursor moved.
            #expect(try await !f.maintenance.expand(pending.id, from: expansion.cursor, adding: deliveries, next: page.next))
            pages += 1
        }
        #expect(pages == 2)
        let notification = try #require(try await f.maintenance.notification(id: accepted.id))
        #expect(notification.counts[.queued] == 5 && notification.expansion == nil)
        let all = try await f.allDeliveries(accepted.id)
        #expect(all.map(\.index) == [0, 1, 2, 3, 4])
        #expect(Set(all.map(\.target.userId)) == ["u1", "u2", "u3", "u4", "u5"])
        #expect(try await f.maintenance.claim(limit: 10).count == 5)
    }

    /// A cancel stops the resolution: no page is added after it.
    @Test func aCancelledActivityIsNotExpandedFurther() async throws {
        let f = try makeStore()
        defer { f.close() }
        for n in 1...3 { try await f.store.registerActivity("m1", "u\(n)", "d", token: 100 + n) }
        let intake = NotificationIntake(registry: f.maintenance, deliveries: f.maintenance, clock: f.clock, pageSize: 1)
        guard case .accepted(let accepted) = try await intake.accept(Self.request(.activity("m1"))),
              let cursor = accepted.expansion?.cursor else {
            Issue.record("not accepted with an expansion")
            return
        }
        let cancelled = try #require(try await f.maintenance.cancel(notificationId: accepted.id))
        #expect(cancelled.expansion == nil && cancelled.isFinished)
        #expect(try await f.maintenance.pendingExpansions(limit: 10).isEmpty)
        let page = try await NotificationIntake.activityPage(f.maintenance, activity: "m1", appId: "default", cursor: cursor, limit: 1)
        let deliveries = accepted.deliveries(for: page.tokens, from: 0, capabilities: DeliveryCapabilities(everyApp: [.apns]),
                                             now: f.clock.now())
        #expect(try await !f.maintenance.expand(accepted.id, from: cursor, adding: deliveries, next: page.next))
        #expect(try await f.allDeliveries(accepted.id).count == 1)
    }

    /// A notification still being resolved is not swept, however old.
    @Test func aNotificationStillBeingResolvedIsNotSwept() async throws {
        let f = try makeStore()
        defer { f.close() }
        for n in 1...2 { try await f.store.registerActivity("m1", "u\(n)", "d", token: 100 + n) }
        let intake = NotificationIntake(registry: f.maintenance, deliveries: f.maintenance, clock: f.clock, pageSize: 1)
        guard case .accepted(let accepted) = try await intake.accept(Self.request(.activity("m1"))) else { return }
        let claimed = try await f.maintenance.claim(limit: 10)
        try await f.maintenance.settle(claimed.map { settlement($0, .delivered, status: 200) })
        f.clock.advance(seconds: 30 * 86_400)
        #expect(try await f.maintenance.sweepNotifications(createdBefore: f.clock.now()) == 0)
        #expect(try await f.maintenance.notification(id: accepted.id) != nil)
    }
}
