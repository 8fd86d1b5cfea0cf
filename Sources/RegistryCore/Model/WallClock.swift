/// The store's source of "now", injectable so tests control expiry without
/// sleeping. Not `Clock`: that name would shadow `Swift.Clock` in every file
/// that imports Registry.
public protocol WallClock: Sendable {
    func now() -> Timestamp
}
