import APNsTestSupport
import Foundation
import RegistryCore
import RegistryTestSupport
import Testing

/// Settlements the store refuses for a while (a PostgreSQL failover, 5–15 s).
@Suite(.serialized) struct SettlementTests {
    /// An answer the provider gave is written once the store takes writes
    /// again, however long the store refused: dropping it would leave a
    /// delivered push `unknown` and a 410's token in place.
    @Test func aSettlementTheStoreRefusesIsWrittenOnceTheStoreIsBack() async throws {
        try await withHarness(script: SenderTests.script([(3, #"[{"status": 410, "reason": "Unregistered", "timestamp": "now"}]"#)])) { h in
            let accepted = try await sendDuringAnOutage(h, to: "ann", refusedAtLeast: 1)
            // Longer than a few quick tries would last (a failover takes 5–15 s).
            try await Task.sleep(for: .seconds(4))
            #expect(h.senderStore.refused >= 5)
            h.senderStore.outage(false)
            let (notification, deliveries) = try await h.settled(accepted.id)
            #expect(notification.counts[.delivered] == 2 && notification.counts[.failed] == 1)
            #expect(deliveries.allSatisfy { $0.attempts == 1 })
            #expect(try await h.store.devices(userId: "ann").filter { $0.pushToken != nil }.map(\.deviceId).sorted() == ["d1", "d2"])
            #expect(try await h.fake.log(count: 3).count == 3)
        }
    }

    /// A sender stopping while the store refuses does not wait for it: the
    /// deliveries stay `sending`, become `unknown` once abandoned, and are
    /// never sent again.
    @Test func aSenderStoppingDuringAnOutageStopsAndItsDeliveriesBecomeUnknown() async throws {
        try await withHarness { h in
            let accepted = try await sendDuringAnOutage(h, to: "bea", refusedAtLeast: 2)
            let began = ContinuousClock.now
            await h.stopSender()
            #expect(ContinuousClock.now - began < .seconds(5))
            #expect(try await h.store.notification(id: accepted.id)?.counts[.sending] == 3)
            h.senderStore.outage(false)
            try h.startSender { $0.abandonAfter = .zero }
            let (notification, _) = try await h.settled(accepted.id)
            #expect(notification.counts[.unknown] == 3)
            #expect(try await h.fake.log(count: 3).count == 3)
        }
    }
}

/// Sends to three devices of `user` while the store refuses settlements,
/// and returns once the fake answered all three and the store refused
/// `refusedAtLeast` settlement writes.
private func sendDuringAnOutage(_ h: SenderHarness, to user: String, refusedAtLeast refused: Int) async throws -> NotificationRecord {
    for n in 1...3 {
        _ = try await h.store.registerDevice(DeviceRegistration(userId: user, deviceId: "d\(n)", pushToken: .set(apnsToken(n))))
    }
    h.senderStore.outage(true)
    try h.startSender()
    let accepted = try await h.notify(.user(user))
    #expect(try await h.fake.log(count: 3).count == 3)
    try await waitUntil(seconds: 20, "the settlement is refused") { h.senderStore.refused >= refused }
    return accepted
}
