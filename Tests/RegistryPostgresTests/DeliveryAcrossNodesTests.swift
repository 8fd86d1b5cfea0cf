import Foundation
import RegistryCore
import RegistryTestSupport
import Testing

/// Several nodes on one PostgreSQL queue: each delivery goes to one node,
/// and one notification's counts lose no change made from both.
@Suite(.requiresPostgres) struct DeliveryAcrossNodesTests {
    @Test func twoNodesClaimingOneNotificationNeverShareADeliveryAndTogetherTakeThemAll() async throws {
        let f = try makeStore(); defer { f.close() }
        let other = try f.anotherNode(poolSize: 4); defer { other.shutdown() }
        for user in 0..<40 { try await f.store.register("u\(user)", "d", token: user) }
        let (notification, deliveries) = notificationRecords(holders: (0..<2_000).map { ("u\($0 % 40)", "d") },
                                                             now: f.clock.now())
        _ = try await f.deliveries.enqueue(notification, deliveries)
        let nodes: [any DeliveryStore] = [f.deliveries, other]

        let claimed = try await withThrowingTaskGroup(of: [ClaimedDelivery].self) { group in
            for worker in 0..<6 {
                let node = nodes[worker % 2]
                group.addTask {
                    var mine: [ClaimedDelivery] = []
                    while true {
                        let batch = try await node.claim(limit: 25)
                        mine += batch
                        // Nothing claimable may mean the rest is locked by another worker's claim.
                        if batch.isEmpty, try await node.queueStats().queued == 0 { return mine }
                    }
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        let indexes = claimed.map(\.delivery.index)
        #expect(indexes.count == 2_000 && Set(indexes) == Set(0..<2_000))
        #expect(claimed.allSatisfy { $0.token == apnsToken(Int($0.delivery.index) % 40) })
        let afterClaims = try #require(try await f.deliveries.notification(id: notification.id))
        #expect(afterClaims.counts[.sending] == 2_000 && afterClaims.counts[.queued] == 0)

        try await withThrowingTaskGroup(of: Void.self) { group in
            for (number, batch) in stride(from: 0, to: claimed.count, by: 50).enumerated() {
                let settlements = claimed[batch..<min(batch + 50, claimed.count)].map { settlement($0, .delivered, status: 200) }
                let node = nodes[number % 2]
                group.addTask { try await node.settle(settlements) }
            }
            try await group.waitForAll()
        }
        let settled = try #require(try await other.notification(id: notification.id))
        #expect(settled.counts[.delivered] == 2_000 && settled.counts.isFinished)
        #expect(try await other.queueStats() == DeliveryQueueStats(queued: 0, sending: 0, oldestDue: nil))
    }
}
