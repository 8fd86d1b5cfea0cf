import Foundation

/// The wall clock.
public struct SystemClock: WallClock {
    public init() {}

    public func now() -> Timestamp { Timestamp(secondsSince1970: Date().timeIntervalSince1970) }
}
