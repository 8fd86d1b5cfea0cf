import Foundation
import LMDB
import RegistryCore

/// The delivery queue's databases, in the registry's environment. Opened by
/// the store (not by `Schema`, which `registryd stats` opens on a backup
/// and must not add databases to).
///
/// | database | key | value |
/// | --- | --- | --- |
/// | delivery.notifications | notification id (16 bytes) | NotificationValue |
/// | delivery.items | notification id, index (4 bytes, big-endian) | DeliveryValue |
/// | delivery.due | priority rank (1 byte: 10 → 0), when due (8 bytes, big-endian ms), id, index | empty: `queued` deliveries |
/// | delivery.sending | when claimed (8 bytes), id, index | empty: `sending` deliveries |
/// | delivery.byCreation | created (8 bytes), id | empty: what the sweep walks |
/// | delivery.idempotency | app, 0x1F, idempotency key | id, created (8 bytes) |
/// | delivery.expanding | created (8 bytes), id | empty: notifications whose activity is still being resolved |
struct DeliverySchema: Sendable {
    let notifications: Database
    let items: Database
    let due: Database
    let sending: Database
    let byCreation: Database
    let idempotency: Database
    let expanding: Database

    init(_ env: Environment) throws {
        notifications = try env.openDatabase("delivery.notifications")
        items = try env.openDatabase("delivery.items")
        due = try env.openDatabase("delivery.due")
        sending = try env.openDatabase("delivery.sending")
        byCreation = try env.openDatabase("delivery.byCreation")
        idempotency = try env.openDatabase("delivery.idempotency")
        expanding = try env.openDatabase("delivery.expanding")
    }
}

/// Keys of the delivery databases: fixed-width big-endian parts
/// (`BigEndian`), so byte order is time order.
enum DeliveryKey {
    /// The 16 bytes of a notification id (a UUID); `nil` for anything else.
    static func id(_ text: String) -> [UInt8]? {
        guard let uuid = UUID(uuidString: text) else { return nil }
        return withUnsafeBytes(of: uuid.uuid) { Array($0) }
    }

    static func text(ofID bytes: ArraySlice<UInt8>) -> String {
        var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &raw) { $0.copyBytes(from: bytes.prefix(16)) }
        return UUID(uuid: raw).uuidString.lowercased()
    }

    static func item(_ id: [UInt8], _ index: UInt32) -> [UInt8] { id + BigEndian.bytes(UInt64(index), count: 4) }

    /// `sending` and `byCreation`: a time, then the item's (or notification's) key.
    static func timed(_ time: Timestamp, _ item: [UInt8]) -> [UInt8] {
        BigEndian.bytes(UInt64(bitPattern: max(time.milliseconds, 0)), count: 8) + item
    }

    /// Every priority rank, most urgent first.
    static let ranks: ClosedRange<UInt8> = 0...10

    /// A notification priority's rank: 10 → 0, 5 → 5, 1 → 9, so byte order
    /// is urgency order.
    static func rank(_ priority: Int) -> UInt8 { UInt8(10 - min(max(priority, 0), 10)) }

    /// `due`: the priority's rank, when due, the item's key: claims take
    /// the most urgent first, the oldest due first within one priority.
    static func due(_ priority: Int, _ time: Timestamp, _ item: [UInt8]) -> [UInt8] {
        [rank(priority)] + timed(time, item)
    }

    /// When a `due` key falls due.
    static func time(ofDue key: [UInt8]) -> Timestamp { time(of: Array(key.dropFirst())) }

    /// The item key inside a `due` key.
    static func item(inDue key: [UInt8]) -> [UInt8] { Array(key.dropFirst(9)) }

    static func time(of key: [UInt8]) -> Timestamp {
        Timestamp(milliseconds: Int64(bitPattern: BigEndian.value(key.prefix(8))))
    }

    /// The item key inside a `due` or `sending` key.
    static func item(inTimed key: [UInt8]) -> [UInt8] { Array(key.dropFirst(8)) }

    static func index(ofItem key: [UInt8]) -> UInt32 {
        UInt32(BigEndian.value(key.suffix(4)))
    }
}
