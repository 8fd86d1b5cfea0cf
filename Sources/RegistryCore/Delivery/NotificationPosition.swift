/// Where a walk of notifications newest first stopped: the last one it
/// returned, by creation time then id. Both engines order notifications by
/// (createdAt, the id's 16 bytes), so a position means the same on either,
/// and one created meanwhile never shifts a page (it sorts before them all).
public struct NotificationPosition: Hashable, Sendable {
    public var createdAt: Timestamp
    /// The notification's id (a lowercase UUID).
    public var id: String

    public init(createdAt: Timestamp, id: String) {
        self.createdAt = createdAt
        self.id = id
    }
}
