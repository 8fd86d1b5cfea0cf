import LMDB
import RegistryCore

/// The delivery queue on LMDB: every change goes through the writer (one
/// group commit with the registry's writes, fsync before it returns), so a
/// notification and all its deliveries are durable together, and a claim
/// reads the holders' tokens in the transaction that marks them `sending`.
extension LMDBRegistryStore: DeliveryStore {
    public func enqueue(_ notification: NotificationRecord, _ deliveries: [DeliveryRecord]) async throws -> EnqueueOutcome {
        guard let id = DeliveryKey.id(notification.id) else { throw DeliveryError.notFound }
        let d = deliverySchema
        return try await writing { w in
            if let first = try Self.firstNotification(w.txn, d, notification, now: w.now) {
                guard first.digest == notification.digest else { throw DeliveryError.idempotencyKeyReused }
                return .existing(first)
            }
            try w.txn.put(notification.encoded(), for: id, in: d.notifications)
            for delivery in deliveries {
                let item = DeliveryKey.item(id, delivery.index)
                try w.txn.put(delivery.encoded(), for: item, in: d.items)
                if delivery.state == .queued {
                    try w.txn.put([], for: DeliveryKey.due(notification.priority, delivery.notBefore, item), in: d.due)
                }
            }
            try w.txn.put([], for: DeliveryKey.timed(notification.createdAt, id), in: d.byCreation)
            if notification.expansion != nil { try w.txn.put([], for: DeliveryKey.timed(notification.createdAt, id), in: d.expanding) }
            if let key = notification.scopedIdempotencyKey {
                try w.txn.put(id + BigEndian.bytes(UInt64(bitPattern: notification.createdAt.milliseconds), count: 8),
                              for: Array(key.utf8), in: d.idempotency)
            }
            return .accepted(notification)
        }
    }

    public func notification(id: String) async throws -> NotificationRecord? {
        guard let key = DeliveryKey.id(id) else { return nil }
        let d = deliverySchema
        return try reading { read in try Self.notification(read.txn, d, key) }
    }

    public func deliveries(notificationId: String, from index: UInt32, limit: Int) async throws -> [DeliveryRecord] {
        guard let id = DeliveryKey.id(notificationId), limit > 0 else { return [] }
        let d = deliverySchema
        return try reading { read in
            var found: [DeliveryRecord] = []
            try read.txn.scan(d.items, prefix: id, from: DeliveryKey.item(id, index)) { key, value in
                found.append(try DeliveryRecord(notificationId: notificationId, index: DeliveryKey.index(ofItem: key), decoding: value))
                return found.count < limit
            }
            return found
        }
    }

    /// A reverse walk of `byCreation` from the position's own key (skipped).
    public func recentNotifications(after position: NotificationPosition?, limit: Int) async throws -> [NotificationRecord] {
        guard limit > 0 else { return [] }
        var start: [UInt8]?
        if let position {
            guard let id = DeliveryKey.id(position.id) else { return [] }
            start = DeliveryKey.timed(position.createdAt, id)
        }
        let d = deliverySchema
        return try reading { read in
            var found: [NotificationRecord] = []
            try read.txn.scan(d.byCreation, from: start, reverse: true) { key, _ in
                if key == start { return true }
                if let notification = try Self.notification(read.txn, d, DeliveryKey.item(inTimed: key)) {
                    found.append(notification)
                }
                return found.count < limit
            }
            return found
        }
    }

    public func cancel(notificationId: String) async throws -> NotificationRecord? {
        guard let id = DeliveryKey.id(notificationId) else { return nil }
        let d = deliverySchema
        return try await writing { w in
            guard var notification = try Self.notification(w.txn, d, id) else { return nil }
            var queued: [([UInt8], DeliveryRecord)] = []
            try w.txn.scan(d.items, prefix: id) { key, value in
                let delivery = try DeliveryRecord(notificationId: notificationId, index: DeliveryKey.index(ofItem: key), decoding: value)
                if delivery.state == .queued { queued.append((key, delivery)) }
                return true
            }
            for (key, var delivery) in queued {
                _ = try w.txn.delete(DeliveryKey.due(notification.priority, delivery.notBefore, key), in: d.due)
                notification.counts.move(from: delivery.state, to: .cancelled)
                delivery.state = .cancelled
                delivery.updatedAt = w.now
                try w.txn.put(delivery.encoded(), for: key, in: d.items)
            }
            notification.cancelled = true
            if notification.expansion != nil {
                notification.expansion = nil
                _ = try w.txn.delete(DeliveryKey.timed(notification.createdAt, id), in: d.expanding)
            }
            try w.txn.put(notification.encoded(), for: id, in: d.notifications)
            return notification
        }
    }

    public func pendingExpansions(limit: Int) async throws -> [NotificationRecord] {
        guard limit > 0 else { return [] }
        let d = deliverySchema
        return try reading { read in
            var found: [NotificationRecord] = []
            try read.txn.scan(d.expanding) { key, _ in
                if let notification = try Self.notification(read.txn, d, DeliveryKey.item(inTimed: key)) { found.append(notification) }
                return found.count < limit
            }
            return found
        }
    }

    public func expand(_ notificationId: String, from cursor: String, adding deliveries: [DeliveryRecord],
                       next: String?) async throws -> Bool {
        guard let id = DeliveryKey.id(notificationId) else { return false }
        let d = deliverySchema
        return try await writing { w in
            guard var notification = try Self.notification(w.txn, d, id), let expansion = notification.expansion,
                  expansion.cursor == cursor, !notification.cancelled else { return false }
            let first = UInt32(notification.counts.total)
            for (offset, var delivery) in deliveries.enumerated() {
                delivery.index = first + UInt32(offset)
                let item = DeliveryKey.item(id, delivery.index)
                try w.txn.put(delivery.encoded(), for: item, in: d.items)
                if delivery.state == .queued {
                    try w.txn.put([], for: DeliveryKey.due(notification.priority, delivery.notBefore, item), in: d.due)
                }
                notification.counts.move(from: nil, to: delivery.state)
            }
            if let next {
                notification.expansion?.cursor = next
            } else {
                notification.expansion = nil
                _ = try w.txn.delete(DeliveryKey.timed(notification.createdAt, id), in: d.expanding)
            }
            try w.txn.put(notification.encoded(), for: id, in: d.notifications)
            return true
        }
    }

    public func claimBatch(limit: Int) async throws -> ClaimBatch {
        guard limit > 0 else { return ClaimBatch(claimed: [], decided: []) }
        let d = deliverySchema
        return try await writing { w in
            let now = w.now
            var dueKeys: [[UInt8]] = []
            for rank in DeliveryKey.ranks where dueKeys.count < limit {
                try w.txn.scan(d.due, prefix: [rank]) { key, _ in
                    guard DeliveryKey.time(ofDue: key) <= now else { return false }
                    dueKeys.append(key)
                    return dueKeys.count < limit
                }
            }
            var notifications = Notifications(txn: w.txn, schema: d)
            var claimed: [ClaimedDelivery] = []
            var decided: [DeliveryRecord] = []
            for dueKey in dueKeys {
                _ = try w.txn.delete(dueKey, in: d.due)
                let item = DeliveryKey.item(inDue: dueKey)
                guard let bytes = try w.txn.get(item, in: d.items),
                      var notification = try notifications.get(Array(item.prefix(16))) else { continue }
                var delivery = try DeliveryRecord(notificationId: notification.id, index: DeliveryKey.index(ofItem: item), decoding: bytes)
                guard delivery.state == .queued else { continue }
                let token = try delivery.takeFromQueue(notification, in: w, now: now)
                if token != nil { try w.txn.put([], for: DeliveryKey.timed(now, item), in: d.sending) }
                notification.counts.move(from: .queued, to: delivery.state)
                try w.txn.put(delivery.encoded(), for: item, in: d.items)
                notifications.set(Array(item.prefix(16)), notification)
                if let token {
                    claimed.append(ClaimedDelivery(delivery: delivery, token: token.token, notification: notification))
                } else {
                    decided.append(delivery)
                }
            }
            try notifications.save()
            return ClaimBatch(claimed: claimed, decided: decided)
        }
    }

    public func settle(_ settlements: [DeliverySettlement]) async throws {
        guard !settlements.isEmpty else { return }
        let d = deliverySchema
        try await writing { w in
            var notifications = Notifications(txn: w.txn, schema: d)
            for settlement in settlements {
                guard let id = DeliveryKey.id(settlement.notificationId) else { continue }
                let item = DeliveryKey.item(id, settlement.index)
                guard let bytes = try w.txn.get(item, in: d.items), var notification = try notifications.get(id) else { continue }
                var delivery = try DeliveryRecord(notificationId: settlement.notificationId, index: settlement.index, decoding: bytes)
                guard delivery.state == .sending else { continue }
                if let claimedAt = delivery.claimedAt { _ = try w.txn.delete(DeliveryKey.timed(claimedAt, item), in: d.sending) }
                delivery.settle(settlement, cancelled: notification.cancelled, now: w.now)
                if delivery.state == .queued {
                    try w.txn.put([], for: DeliveryKey.due(notification.priority, delivery.notBefore, item), in: d.due)
                }
                notification.counts.move(from: .sending, to: delivery.state)
                try w.txn.put(delivery.encoded(), for: item, in: d.items)
                notifications.set(id, notification)
            }
            try notifications.save()
        }
    }

    public func abandonClaims(claimedBefore cutoff: Timestamp) async throws -> Int {
        let d = deliverySchema
        return try await writing { w in
            var stale: [[UInt8]] = []
            try w.txn.scan(d.sending) { key, _ in
                guard DeliveryKey.time(of: key) < cutoff else { return false }
                stale.append(key)
                return stale.count < 10_000
            }
            var notifications = Notifications(txn: w.txn, schema: d)
            var abandoned = 0
            for key in stale {
                _ = try w.txn.delete(key, in: d.sending)
                let item = DeliveryKey.item(inTimed: key)
                guard let bytes = try w.txn.get(item, in: d.items), var notification = try notifications.get(Array(item.prefix(16))) else { continue }
                var delivery = try DeliveryRecord(notificationId: notification.id, index: DeliveryKey.index(ofItem: item), decoding: bytes)
                guard delivery.state == .sending else { continue }
                delivery.abandon(now: w.now)
                abandoned += 1
                notification.counts.move(from: .sending, to: .unknown)
                try w.txn.put(delivery.encoded(), for: item, in: d.items)
                notifications.set(Array(item.prefix(16)), notification)
            }
            try notifications.save()
            return abandoned
        }
    }

    public func sweepNotifications(createdBefore cutoff: Timestamp) async throws -> Int {
        let d = deliverySchema
        return try await writing { w in
            // Unfinished notifications are passed over, not taken into the
            // batch: 64 of them must not hold back the finished ones behind.
            var candidates: [([UInt8], NotificationRecord?)] = []
            try w.txn.scan(d.byCreation) { key, _ in
                guard DeliveryKey.time(of: key) < cutoff else { return false }
                let notification = try Self.notification(w.txn, d, DeliveryKey.item(inTimed: key))
                if notification?.isFinished ?? true { candidates.append((key, notification)) }
                return candidates.count < 64
            }
            var swept = 0
            for (key, notification) in candidates {
                let id = DeliveryKey.item(inTimed: key)
                if let notification {
                    var items: [[UInt8]] = []
                    try w.txn.scan(d.items, prefix: id) { itemKey, _ in
                        items.append(itemKey)
                        return true
                    }
                    for item in items { _ = try w.txn.delete(item, in: d.items) }
                    _ = try w.txn.delete(id, in: d.notifications)
                    for key in [notification.scopedIdempotencyKey, notification.idempotencyKey].compactMap({ $0 }) {
                        if let entry = try w.txn.get(Array(key.utf8), in: d.idempotency), Array(entry.prefix(16)) == id {
                            _ = try w.txn.delete(Array(key.utf8), in: d.idempotency)
                        }
                    }
                }
                _ = try w.txn.delete(key, in: d.byCreation)
                swept += 1
            }
            return swept
        }
    }

    public func queueStats() async throws -> DeliveryQueueStats {
        let d = deliverySchema
        return try reading { read in
            var oldest: Timestamp?
            for rank in DeliveryKey.ranks {
                try read.txn.scan(d.due, prefix: [rank]) { key, _ in
                    oldest = min(oldest ?? .init(milliseconds: .max), DeliveryKey.time(ofDue: key))
                    return false
                }
            }
            return DeliveryQueueStats(queued: try read.txn.count(in: d.due), sending: try read.txn.count(in: d.sending),
                                      oldestDue: oldest)
        }
    }

    /// The `due` and `sending` indexes' entry counts (LMDB keeps them: O(1)).
    public func pendingDeliveries() async throws -> Int {
        let d = deliverySchema
        return try reading { read in try read.txn.count(in: d.due) + read.txn.count(in: d.sending) }
    }

    /// The notification that used `notification`'s idempotency key within
    /// the window, in its app. A key stored before keys were scoped (the
    /// bare key) still answers for 24 hours, when its notification is of
    /// the same app.
    static func firstNotification(_ txn: ReadTransaction, _ d: DeliverySchema, _ notification: NotificationRecord,
                                  now: Timestamp) throws -> NotificationRecord? {
        for key in [notification.scopedIdempotencyKey, notification.idempotencyKey].compactMap({ $0 }) {
            guard let entry = try txn.get(Array(key.utf8), in: d.idempotency), entry.count == 24,
                  DeliveryKey.time(of: Array(entry.suffix(8))) > now.subtracting(idempotencyWindow),
                  let first = try Self.notification(txn, d, Array(entry.prefix(16))), first.appId == notification.appId else { continue }
            return first
        }
        return nil
    }

    static func notification(_ txn: ReadTransaction, _ d: DeliverySchema, _ id: [UInt8]) throws -> NotificationRecord? {
        try txn.get(id, in: d.notifications).map { try NotificationRecord(id: DeliveryKey.text(ofID: id[...]), decoding: $0) }
    }
}

/// The notifications one write transaction touches, each read once and
/// written once at the end (a claim or settlement of many deliveries of one
/// notification updates its counts once).
private struct Notifications {
    let txn: WriteTransaction
    let schema: DeliverySchema
    private var cache: [[UInt8]: NotificationRecord] = [:]

    init(txn: WriteTransaction, schema: DeliverySchema) {
        self.txn = txn
        self.schema = schema
    }

    mutating func get(_ id: [UInt8]) throws -> NotificationRecord? {
        if let cached = cache[id] { return cached }
        let found = try LMDBRegistryStore.notification(txn, schema, id)
        cache[id] = found
        return found
    }

    mutating func set(_ id: [UInt8], _ notification: NotificationRecord) { cache[id] = notification }

    func save() throws {
        for (id, notification) in cache { try txn.put(notification.encoded(), for: id, in: schema.notifications) }
    }
}
